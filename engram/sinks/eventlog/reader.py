"""``EventLogReader``: the durable records of chosen topics and partitions, in offset order.

Only what a checkpoint vouches for is read: segments up to the checkpointed one, and of that one
only its durable bytes, so a reader never sees a torn tail or a batch still being written.
An offset range starts at the right segment by binary search over the file names (each names its
first offset) and reads no earlier segment. A time range filters on ``timestamp_ms`` (event
times are not monotonic within a partition, so it cannot skip segments).

Sealed records (sinks/eventlog/sealed.py) are opened with the reader's key store after the range
filter; those whose key is erased are skipped and counted in ``erased``. A reader without a key
store raises ``SealedRecordError`` at the first sealed record rather than yield ciphertext.
"""

from __future__ import annotations

import io
from bisect import bisect_right
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Final, cast

import fastavro

from engram.schemas.record import RawRecord, Record
from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog.blocks import count_records
from engram.sinks.eventlog.keys import KeyStore
from engram.sinks.eventlog.layout import (
    EventLogCorruptError,
    list_partitions,
    list_segments,
    list_topics,
    partition_dir,
    read_checkpoint,
    segment_first_offset,
)
from engram.sinks.eventlog.sealed import open_stored


@dataclass(frozen=True, slots=True)
class LogRange:
    """Which records to read. Offsets are inclusive at both ends; ``since_ms`` is inclusive and
    ``until_ms`` exclusive (epoch milliseconds, UTC). None means unbounded."""

    from_offset: int | None = None
    to_offset: int | None = None
    since_ms: int | None = None
    until_ms: int | None = None

    def __post_init__(self) -> None:
        if self.from_offset is not None and self.to_offset is not None and self.from_offset > self.to_offset:
            msg = f"from_offset {self.from_offset} is after to_offset {self.to_offset}"
            raise ValueError(msg)
        if self.since_ms is not None and self.until_ms is not None and self.since_ms >= self.until_ms:
            msg = f"since_ms {self.since_ms} is not before until_ms {self.until_ms}"
            raise ValueError(msg)

    def contains(self, event: LoggedEvent) -> bool:
        offset = event["offset"]
        if self.from_offset is not None and offset < self.from_offset:
            return False
        if self.to_offset is not None and offset > self.to_offset:
            return False
        ts = event["timestamp_ms"]
        if self.since_ms is not None and ts < self.since_ms:
            return False
        return not (self.until_ms is not None and ts >= self.until_ms)


EVERYTHING: Final = LogRange()


@dataclass(frozen=True, slots=True)
class SegmentSpan:
    """One segment to read: its path, first offset, and how many bytes of it are durable."""

    path: Path
    first_offset: int
    durable_bytes: int | None  # None: the whole file (a sealed segment)


class EventLogReader:
    """Reads the log under ``root``. Safe to use while a writer appends (it reads durable bytes).

    ``keys`` opens sealed records; ``erased`` counts the records skipped because their subject's
    key is erased. Forgets made meanwhile by other processes are seen from the next segment on.
    """

    def __init__(self, root: Path | str, keys: KeyStore | None = None) -> None:
        self.root = Path(root)
        self.keys = keys
        self.erased = 0

    def topics(self) -> list[str]:
        return list_topics(self.root)

    def partitions(self, topic: str) -> list[int]:
        return list_partitions(self.root, topic)

    def segments(self, topic: str, partition: int, from_offset: int | None = None) -> list[SegmentSpan]:
        """Durable segments of a partition, starting with the one that holds ``from_offset``."""
        directory = partition_dir(self.root, topic, partition)
        names = list_segments(directory)
        checkpoint = read_checkpoint(directory)
        if checkpoint is None:
            if names:
                msg = f"{directory} has segments but no checkpoint"
                raise EventLogCorruptError(msg)
            return []
        if checkpoint.segment is None:
            return []
        names = [name for name in names if name <= checkpoint.segment]
        firsts = [segment_first_offset(name) for name in names]
        start = 0 if from_offset is None else max(bisect_right(firsts, from_offset) - 1, 0)
        return [
            SegmentSpan(
                path=directory / name,
                first_offset=first,
                durable_bytes=checkpoint.durable_bytes if name == checkpoint.segment else None,
            )
            for name, first in zip(names[start:], firsts[start:], strict=True)
        ]

    def read_partition(self, topic: str, partition: int, window: LogRange = EVERYTHING) -> Iterator[LoggedEvent]:
        """Records of one partition in offset order, filtered by ``window``."""
        for span in self.segments(topic, partition, window.from_offset):
            if window.to_offset is not None and span.first_offset > window.to_offset:
                return
            if self.keys is not None:
                self.keys.refresh()
            for stored in _segment_records(span):
                if window.to_offset is not None and stored["offset"] > window.to_offset:
                    return
                if window.contains(cast(LoggedEvent, stored)):
                    event = open_stored(stored, self.keys)
                    if event is None:
                        self.erased += 1
                    else:
                        yield event

    def read(
        self,
        topics: Sequence[str] | None = None,
        window: LogRange = EVERYTHING,
        partitions: Collection[int] | None = None,
    ) -> Iterator[LoggedEvent]:
        """Records of ``topics`` (all when None), partition after partition, each in offset order."""
        for topic in self.topics() if topics is None else topics:
            for partition in self.partitions(topic):
                if partitions is None or partition in partitions:
                    yield from self.read_partition(topic, partition, window)

    def count_upper_bound(self, topics: Sequence[str] | None = None, window: LogRange = EVERYTHING) -> int:
        """Records in the segments a read would visit, from OCF block headers only (for progress bars)."""
        total = 0
        for topic in self.topics() if topics is None else topics:
            for partition in self.partitions(topic):
                for span in self.segments(topic, partition, window.from_offset):
                    if window.to_offset is not None and span.first_offset > window.to_offset:
                        break
                    with span.path.open("rb") as handle:
                        total += count_records(handle, span.durable_bytes)
        return total


def as_record(event: LoggedEvent) -> RawRecord:
    """A logged event as the record it was when it entered the worker."""
    e = event
    return Record(e["topic"], e["partition"], e["offset"], e["timestamp_ms"], e["key"], e["value"])


def _open_span(span: SegmentSpan) -> BinaryIO:
    if span.durable_bytes is None:
        return span.path.open("rb")
    # The active segment: read only its durable prefix, whatever a writer appends meanwhile.
    with span.path.open("rb") as handle:
        data = handle.read(span.durable_bytes)
    if len(data) < span.durable_bytes:
        msg = f"{span.path} is shorter than its {span.durable_bytes} durable bytes"
        raise EventLogCorruptError(msg)
    return io.BytesIO(data)


def _segment_records(span: SegmentSpan) -> Iterator[dict[str, Any]]:
    """Records as stored: a LoggedEvent, and its ``seal`` where the segment's schema has one."""
    with _open_span(span) as handle:
        for record in fastavro.reader(handle):
            yield cast(dict[str, Any], record)
