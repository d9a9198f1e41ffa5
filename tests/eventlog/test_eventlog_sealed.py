"""A sealed event log: read back as written, and after a subject is forgotten, read without it."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import fastavro
import pytest
from fastavro.schema import parse_schema

import engram.sinks.eventlog.segment as segment_module
from engram.schemas.record import Record
from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog import (
    EventLogConfig,
    EventLogReader,
    EventLogSink,
    KeyStore,
    SealedRecordError,
    SealingPolicy,
    SegmentWriter,
    erase_subject,
)
from engram.sinks.eventlog.layout import Checkpoint, write_checkpoint
from tests.eventlog.records import BASE_MS, events

TOPIC = "engram.turns"
CODE = "engram.code"
USERS = ("ada", "bob", "cy")


def by_key(topic: str, key: bytes | None) -> str | None:
    """The worker's rule in small: user-keyed turns are sealed, code is not."""
    return None if topic == CODE or not key else key.decode()


def turn(offset: int, partition: int = 0, topic: str = TOPIC) -> LoggedEvent:
    """A record of user ``USERS[offset % 3]``; its key and value carry a marker a scan can find."""
    user = USERS[offset % len(USERS)]
    value = None if offset % 10 == 9 else f"MARKER-{user}-says-{offset}".encode()  # every 10th a tombstone
    return {"topic": topic, "partition": partition, "offset": offset, "timestamp_ms": BASE_MS + offset,
            "key": f"MARKER-{user}".encode(), "value": value}  # fmt: skip


def turns(first: int, last: int, partition: int = 0, topic: str = TOPIC) -> list[LoggedEvent]:
    return [turn(o, partition, topic) for o in range(first, last + 1)]


def item(event: LoggedEvent) -> Record[bytes | None]:
    e = event
    return Record(e["topic"], e["partition"], e["offset"], e["timestamp_ms"], e["key"], e["value"])


def sealed_sink(root: Path, config: EventLogConfig | None = None) -> EventLogSink:
    policy = SealingPolicy(by_key, KeyStore(root / "keys"))
    return EventLogSink(root / "log", config or EventLogConfig(), sealing=policy)


def write(root: Path, records: list[LoggedEvent], config: EventLogConfig | None = None) -> None:
    with sealed_sink(root, config) as sink:
        for record in records:
            sink.add(item(record))
        sink.flush()


def read(root: Path, topic: str = TOPIC, partition: int = 0) -> tuple[list[LoggedEvent], int]:
    reader = EventLogReader(root / "log", KeyStore(root / "keys"))
    return list(reader.read_partition(topic, partition)), reader.erased


def segment_bytes(root: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted((root / "log").rglob("*.avro")))


def test_a_sealed_log_reads_back_as_written_and_stores_no_plaintext(tmp_path: Path) -> None:
    write(tmp_path, turns(0, 59) + turns(0, 9, partition=1))
    assert read(tmp_path) == (turns(0, 59), 0)
    assert read(tmp_path, partition=1) == (turns(0, 9, partition=1), 0)
    assert b"MARKER" not in segment_bytes(tmp_path)
    with pytest.raises(SealedRecordError, match="key store"):
        list(EventLogReader(tmp_path / "log").read())  # no ciphertext is ever yielded as a value


def test_after_forget_the_subject_is_skipped_and_the_others_are_intact(tmp_path: Path) -> None:
    write(tmp_path, turns(0, 59))
    assert erase_subject(KeyStore(tmp_path / "keys"), "MARKER-ada")
    got, erased = read(tmp_path)
    assert got == [e for e in turns(0, 59) if e["key"] != b"MARKER-ada"]
    assert erased == 20
    raw = segment_bytes(tmp_path)
    assert b"MARKER-ada" not in raw and b"ada-says" not in raw  # neither its key nor its values


def test_a_reader_sees_a_forget_made_by_another_process_from_its_next_segment(tmp_path: Path) -> None:
    write(tmp_path, turns(0, 29), EventLogConfig(segment_bytes=1))  # one segment per batch
    write(tmp_path, turns(30, 59), EventLogConfig(segment_bytes=1))
    reader = EventLogReader(tmp_path / "log", KeyStore(tmp_path / "keys"))
    records = reader.read_partition(TOPIC, 0)
    first = [next(records) for _ in range(30)]  # the whole first segment, with ada's key cached
    assert first == turns(0, 29)
    erase_subject(KeyStore(tmp_path / "keys"), "MARKER-ada")  # another process
    rest = list(records)
    assert rest == [e for e in turns(30, 59) if e["key"] != b"MARKER-ada"] and reader.erased == 10


def test_topics_the_policy_leaves_alone_are_stored_in_the_clear(tmp_path: Path) -> None:
    write(tmp_path, turns(0, 5, topic=CODE))
    assert read(tmp_path, CODE) == (turns(0, 5, topic=CODE), 0)
    assert b"MARKER-ada-says-0" in segment_bytes(tmp_path)
    assert EventLogReader(tmp_path / "log").read_partition(CODE, 0) is not None  # no key store needed


def test_without_a_policy_records_are_stored_as_received(tmp_path: Path) -> None:
    with EventLogSink(tmp_path / "log") as sink:
        for record in turns(0, 5):
            sink.add(item(record))
        sink.flush()
    assert list(EventLogReader(tmp_path / "log").read()) == turns(0, 5)
    assert not (tmp_path / "keys").exists()


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs."""


def test_a_crash_mid_batch_with_sealing_on_loses_and_doubles_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write(tmp_path, turns(0, 39))
    (segment,) = sorted((tmp_path / "log" / TOPIC / "0").glob("*.avro"))
    durable = segment.read_bytes()

    def die(*_args: object, **_kwargs: object) -> None:
        raise Crash

    with monkeypatch.context() as patched:
        patched.setattr(segment_module, "write_checkpoint", die)
        with pytest.raises(Crash):
            write(tmp_path, turns(40, 69))
    assert segment.stat().st_size > len(durable)  # the sealed extra reached the disk

    # The consumer redelivers from its last commit (say 25); the torn tail is cut, and only 40..69 are added.
    write(tmp_path, turns(25, 69))
    assert segment.read_bytes()[: len(durable)] == durable
    assert read(tmp_path) == (turns(0, 69), 0)


def test_redelivered_records_make_no_key(tmp_path: Path) -> None:
    write(tmp_path, turns(0, 29))
    erase_subject(KeyStore(tmp_path / "keys"), "MARKER-ada")
    keys_before = sorted(p.name for p in (tmp_path / "keys").glob("*.key"))
    write(tmp_path, turns(0, 29))  # all durable already: skipped before sealing
    assert sorted(p.name for p in (tmp_path / "keys").glob("*.key")) == keys_before


def _old_schema() -> Any:
    text = resources.files("engram.schemas").joinpath("avro", "history", "LoggedEvent.v1.avsc").read_text("utf-8")
    schema = json.loads(text)
    assert "seal" not in {field["name"] for field in schema["fields"]}
    return parse_schema(schema)


def _write_old_segment(root: Path, records: list[LoggedEvent]) -> Path:
    """A partition as an Engram before sealing left it: a v1 segment and its checkpoint."""
    directory = root / "log" / TOPIC / "0"
    directory.mkdir(parents=True)
    path = directory / "00000000000000000000.avro"
    with path.open("wb") as handle:
        fastavro.writer(handle, _old_schema(), [dict(r) for r in records])
    write_checkpoint(directory, Checkpoint(path.name, path.stat().st_size, records[-1]["offset"]))
    return path


def test_a_segment_written_before_sealing_still_reads_and_is_never_appended_to(tmp_path: Path) -> None:
    old = events(0, 19)
    path = _write_old_segment(tmp_path, old)
    assert list(EventLogReader(tmp_path / "log").read()) == old
    assert read(tmp_path) == (old, 0)
    before = path.read_bytes()
    # The upgraded worker resumes this partition: its next batch starts a segment of the new schema.
    write(tmp_path, turns(20, 29))
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.glob("*.avro")) == [path.name, "00000000000000000020.avro"]
    assert read(tmp_path) == (old + turns(20, 29), 0)
    with SegmentWriter(tmp_path / "log", TOPIC, 0) as writer:  # and a plain append after it still works
        writer.append(events(30, 31))
    assert read(tmp_path)[0] == old + turns(20, 29) + events(30, 31)
