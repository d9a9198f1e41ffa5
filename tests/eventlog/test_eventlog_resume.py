"""Write, checkpoint, crash mid-batch, resume: the torn tail is gone and nothing is lost or doubled."""

from __future__ import annotations

from pathlib import Path

import pytest

import engram.sinks.eventlog.segment as segment_module
from engram.sinks.eventlog import EventLogConfig, EventLogCorruptError, EventLogError, SegmentWriter
from engram.sinks.eventlog.layout import read_checkpoint
from tests.eventlog.records import event, events, logged, offsets

TOPIC = "engram.turns"


class Crash(BaseException):
    """Stands for the process dying: nothing after it runs."""


def _crash_before_checkpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    def die(*_args: object, **_kwargs: object) -> None:
        raise Crash

    monkeypatch.setattr(segment_module, "write_checkpoint", die)


def _segment_files(root: Path, partition: int = 0) -> list[Path]:
    return sorted((root / TOPIC / str(partition)).glob("*.avro"))


def test_bytes_written_without_checkpoint_are_truncated_on_resume(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        writer.append(events(0, 99))
        durable = read_checkpoint(tmp_path / TOPIC / "0")
        assert durable is not None
        assert durable.last_offset == 99
        (segment,) = _segment_files(tmp_path)
        snapshot = segment.read_bytes()
        assert len(snapshot) == durable.durable_bytes
        with monkeypatch.context() as patched:
            _crash_before_checkpoint(patched)
            with pytest.raises(Crash):
                writer.append(events(100, 149))
    assert segment.stat().st_size > durable.durable_bytes  # the extra reached the disk

    with SegmentWriter(tmp_path, TOPIC, 0) as resumed:
        assert resumed.last_durable_offset == 99
        assert segment.read_bytes() == snapshot  # the extra is gone, earlier bytes untouched
        assert offsets(logged(tmp_path)) == list(range(100))
        # The consumer redelivers from its last commit (say 80); every record ends up there once.
        resumed.append(events(80, 149))
    assert logged(tmp_path) == events(0, 149)
    assert segment.read_bytes()[: len(snapshot)] == snapshot


def test_truncated_partial_block_is_cut_and_rewritten(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        writer.append(events(0, 9))
        first = read_checkpoint(tmp_path / TOPIC / "0")
        writer.append(events(10, 19))
    assert first is not None
    (segment,) = _segment_files(tmp_path)
    whole = segment.read_bytes()
    # A crash tore the second block in half before its checkpoint was written.
    segment.write_bytes(whole[: first.durable_bytes + (len(whole) - first.durable_bytes) // 2])
    (tmp_path / TOPIC / "0" / "checkpoint.json").write_text(
        f'{{"segment": "{first.segment}", "durable_bytes": {first.durable_bytes}, "last_offset": 9}}'
    )

    with SegmentWriter(tmp_path, TOPIC, 0) as resumed:
        assert resumed.last_durable_offset == 9
        assert segment.stat().st_size == first.durable_bytes
        assert offsets(logged(tmp_path)) == list(range(10))
        resumed.append(events(0, 19))
    assert logged(tmp_path) == events(0, 19)
    assert segment.read_bytes()[: first.durable_bytes] == whole[: first.durable_bytes]


def test_segment_created_by_an_unfinished_roll_is_removed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    config = EventLogConfig(segment_bytes=2_000)
    with SegmentWriter(tmp_path, TOPIC, 0, config) as writer:
        writer.append(events(0, 39))  # well past 2,000 bytes: the next batch rolls
        with monkeypatch.context() as patched:
            _crash_before_checkpoint(patched)
            with pytest.raises(Crash):
                writer.append(events(40, 59))
    assert [p.name for p in _segment_files(tmp_path)] == ["00000000000000000000.avro", "00000000000000000040.avro"]

    with SegmentWriter(tmp_path, TOPIC, 0, config) as resumed:
        assert resumed.last_durable_offset == 39
        assert [p.name for p in _segment_files(tmp_path)] == ["00000000000000000000.avro"]
        resumed.append(events(35, 59))
    assert logged(tmp_path) == events(0, 59)
    assert [p.name for p in _segment_files(tmp_path)] == ["00000000000000000000.avro", "00000000000000000040.avro"]


def test_redelivered_records_are_skipped(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        first = writer.append(events(0, 9))
        again = writer.append(events(5, 14))
        same = writer.append(events(0, 14))
    assert (first.written, first.skipped) == (10, 0)
    assert (again.written, again.skipped, again.last_offset) == (5, 5, 14)
    assert (same.written, same.skipped, same.bytes_written) == (0, 15, 0)
    assert logged(tmp_path) == events(0, 14)


def test_offsets_may_have_gaps_but_never_go_back(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        result = writer.append([event(3), event(7), event(5), event(7), event(20)])  # 5 and the 2nd 7 are stale
    assert (result.written, result.skipped) == (3, 2)
    assert offsets(logged(tmp_path)) == [3, 7, 20]


def test_records_carry_topic_partition_and_offset(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, "engram.code", 3) as writer:
        writer.append(events(40, 42, topic="engram.code", partition=3))
    got = logged(tmp_path, "engram.code", 3)
    assert [(r["topic"], r["partition"], r["offset"]) for r in got] == [("engram.code", 3, o) for o in (40, 41, 42)]
    assert got[0]["value"] == event(40, "engram.code", 3)["value"]
    assert got[0]["key"] == b"user-5"


def test_record_for_another_partition_is_refused(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer, pytest.raises(EventLogError, match=r"engram.turns\[1\]"):
        writer.append([event(0, partition=1)])


def test_segments_without_checkpoint_are_not_guessed_at(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        writer.append(events(0, 9))
    (tmp_path / TOPIC / "0" / "checkpoint.json").unlink()
    with pytest.raises(EventLogCorruptError, match="no checkpoint"):
        SegmentWriter(tmp_path, TOPIC, 0).open()


def test_segment_shorter_than_its_durable_length_is_reported(tmp_path: Path) -> None:
    with SegmentWriter(tmp_path, TOPIC, 0) as writer:
        writer.append(events(0, 9))
    (segment,) = _segment_files(tmp_path)
    segment.write_bytes(segment.read_bytes()[:-5])
    with pytest.raises(EventLogCorruptError, match="were made durable"):
        SegmentWriter(tmp_path, TOPIC, 0).open()


def test_topic_names_cannot_escape_the_log_root(tmp_path: Path) -> None:
    with pytest.raises(EventLogError, match="invalid topic"):
        SegmentWriter(tmp_path, "../outside", 0)
