"""Segments roll by size; the reader filters by offset and time and starts at the right segment."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.sinks.eventlog import EventLogConfig, EventLogReader, LogRange, SegmentWriter
from engram.sinks.eventlog.layout import segment_first_offset
from tests.eventlog.records import BASE_MS, events, logged, offsets

TOPIC = "engram.turns"
SMALL = EventLogConfig(segment_bytes=4_096)


def _write(root: Path, batches: list[tuple[int, int]], partition: int = 0, topic: str = TOPIC) -> None:
    with SegmentWriter(root, topic, partition, SMALL) as writer:
        for first, last in batches:
            writer.append(events(first, last, topic, partition))


def test_segments_roll_by_size_and_are_named_by_first_offset(tmp_path: Path) -> None:
    _write(tmp_path, [(o, o + 19) for o in range(0, 400, 20)])
    spans = EventLogReader(tmp_path).segments(TOPIC, 0)
    assert len(spans) > 3
    for span in spans:
        first_record = next(EventLogReader(tmp_path).read_partition(TOPIC, 0, LogRange(from_offset=span.first_offset)))
        assert first_record["offset"] == span.first_offset == segment_first_offset(span.path.name)
    # A segment only exceeds the roll size by the batch that crossed it.
    sealed = [span.path.stat().st_size for span in spans[:-1]]
    assert all(size >= SMALL.segment_bytes for size in sealed)
    assert all(size < SMALL.segment_bytes + 3_000 for size in sealed)
    assert logged(tmp_path) == events(0, 399)
    assert EventLogReader(tmp_path).count_upper_bound() == 400


def test_offset_range_starts_at_the_segment_that_holds_it(tmp_path: Path) -> None:
    _write(tmp_path, [(o, o + 19) for o in range(0, 400, 20)])
    reader = EventLogReader(tmp_path)
    every = reader.segments(TOPIC, 0)
    later = reader.segments(TOPIC, 0, from_offset=250)
    assert later[0].first_offset <= 250
    assert len(later) < len(every)
    assert later == every[len(every) - len(later) :]
    got = list(reader.read_partition(TOPIC, 0, LogRange(from_offset=250, to_offset=262)))
    assert offsets(got) == list(range(250, 263))


def test_time_range_is_since_inclusive_until_exclusive(tmp_path: Path) -> None:
    _write(tmp_path, [(0, 99)])
    window = LogRange(since_ms=BASE_MS + 10_000, until_ms=BASE_MS + 20_000)  # offsets 10 .. 19
    assert offsets(list(EventLogReader(tmp_path).read([TOPIC], window))) == list(range(10, 20))


def test_offset_and_time_ranges_combine(tmp_path: Path) -> None:
    _write(tmp_path, [(0, 99)])
    window = LogRange(from_offset=15, to_offset=50, until_ms=BASE_MS + 20_000)
    assert offsets(list(EventLogReader(tmp_path).read([TOPIC], window))) == list(range(15, 20))


def test_reads_chosen_topics_partition_by_partition(tmp_path: Path) -> None:
    _write(tmp_path, [(0, 4)], partition=0)
    _write(tmp_path, [(0, 2)], partition=1)
    _write(tmp_path, [(7, 8)], partition=0, topic="engram.code")
    reader = EventLogReader(tmp_path)
    assert reader.topics() == ["engram.code", TOPIC]
    got = [(r["topic"], r["partition"], r["offset"]) for r in reader.read([TOPIC])]
    assert got == [(TOPIC, 0, o) for o in range(5)] + [(TOPIC, 1, o) for o in range(3)]
    assert [r["offset"] for r in reader.read([TOPIC], partitions={1})] == [0, 1, 2]
    assert reader.count_upper_bound() == 10
    assert reader.count_upper_bound([TOPIC], LogRange(to_offset=3)) == 8  # whole segments, not records
    assert list(reader.read(["engram.nothing"])) == []


def test_reader_sees_only_durable_bytes(tmp_path: Path) -> None:
    _write(tmp_path, [(0, 9)])
    (segment,) = sorted((tmp_path / TOPIC / "0").glob("*.avro"))
    with segment.open("ab") as handle:  # a writer's batch in flight, not yet checkpointed
        handle.write(b"\x28half a block")
    assert logged(tmp_path) == events(0, 9)
    assert EventLogReader(tmp_path).count_upper_bound() == 10


def test_ranges_must_not_be_empty() -> None:
    with pytest.raises(ValueError, match="after"):
        LogRange(from_offset=5, to_offset=4)
    with pytest.raises(ValueError, match="not before"):
        LogRange(since_ms=10, until_ms=10)
