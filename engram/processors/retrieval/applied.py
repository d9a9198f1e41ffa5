"""Which offsets of one topic the in-process view has applied: a watermark per partition (pure).

A worker's `MemoryView` is fed by more than one path: for engram.memory, the local event log at
start, the memory agent's batches (the partitions Faust assigned here) and the read-backs of what
the view is behind on (`behind`); for the replica topic engram.memory.shared, the follower
(streams/follow.py), through a second `AppliedOffsets`. Each path delivers a partition contiguously
and in offset order, but the paths overlap around a start or a rebalance. Every record goes
through its topic's gate: an offset is *fresh* only above its partition's watermark, and admitting
it raises the watermark, so each offset reaches the view at most once and in increasing order per
partition, whichever path delivers it first. A record that could not be decoded never reaches the
gate; the watermark simply jumps over it with the next one.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from engram.schemas.record import Record

T = TypeVar("T")


class AppliedOffsets:
    """The highest offset applied per partition of one topic (engram.memory)."""

    def __init__(self, watermarks: Mapping[int, int] | None = None) -> None:
        self._last: dict[int, int] = dict(watermarks or {})

    def fresh(self, partition: int, offset: int) -> bool:
        """True (and the watermark rises to ``offset``) when ``offset`` is above the watermark."""
        last = self._last.get(partition)
        if last is not None and offset <= last:
            return False
        self._last[partition] = offset
        return True

    def admit(self, records: Iterable[Record[T]]) -> list[T]:
        """The values of the fresh records, in the order given."""
        return [r.value for r in records if self.fresh(r.partition, r.offset)]

    def next_offset(self, partition: int) -> int | None:
        """Where a reader of ``partition`` resumes: watermark + 1, or None (from the beginning)."""
        last = self._last.get(partition)
        return None if last is None else last + 1

    def behind(self, records: Iterable[Record[object]], *, from_start: bool = False) -> dict[int, tuple[int, int]]:
        """Per partition whose first record here lies past watermark + 1: the offsets in between,
        as ``(start, end)`` (end excluded). A partition with no watermark is behind from offset 0
        when ``from_start`` (a reader that must hold the whole partition), and never otherwise."""
        out: dict[int, tuple[int, int]] = {}
        seen: set[int] = set()
        for record in records:
            partition, offset = record.partition, record.offset
            if partition in seen:
                continue
            seen.add(partition)
            last = self._last.get(partition)
            if last is None and from_start and offset > 0:
                out[partition] = (0, offset)
            elif last is not None and offset > last + 1:
                out[partition] = (last + 1, offset)
        return out

    def snapshot(self) -> dict[int, int]:
        return dict(self._last)
