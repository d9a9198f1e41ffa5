"""Which offsets a consumer skipped: next-expected offsets per partition (pure bookkeeping).

Engram topics are never compacted and never written in transactions, so the offsets of a
partition are contiguous. A consumer that has received offset ``n`` and then receives ``n + k``
(``k > 1``) skipped ``k - 1`` records; one that receives an offset below the next expected one
got a redelivery (at-least-once transport), which idempotent processing absorbs.

The first record a tracker sees of a partition says nothing about where the consumer group
resumed, so it yields a gap with an open start; the caller closes it with the group's committed
offset (or the log start when the group has none) through `OffsetGap.clipped`. The same clipping
drops apparent gaps that are only a rebalance: a partition that moved to another worker and back
resumes at a committed offset the other worker advanced.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class OffsetGap:
    """Offsets ``[start, end)`` of a partition that a consumer did not receive.

    ``start`` None means "from wherever the consumer group resumed" (not known to the tracker).
    """

    topic: str
    partition: int
    start: int | None
    end: int

    def clipped(self, resumed_at: int) -> OffsetGap | None:
        """The part of the gap at or after ``resumed_at`` (the group's committed offset, or the
        log start when the group has none); None when no offset of it is left."""
        start = resumed_at if self.start is None else max(self.start, resumed_at)
        return None if start >= self.end else replace(self, start=start)

    @property
    def size(self) -> int:
        """How many offsets are missing (0 while the start is open)."""
        return 0 if self.start is None else self.end - self.start


class OffsetTracker:
    """The next offset a consumer expects per (topic, partition).

    `observe` every delivered record in delivery order; it never moves the expectation backwards,
    because every offset below it was delivered to this consumer (or repaired) already.
    """

    def __init__(self) -> None:
        self._next: dict[tuple[str, int], int] = {}

    def expected(self, topic: str, partition: int) -> int | None:
        return self._next.get((topic, partition))

    def observe(self, topic: str, partition: int, offset: int) -> OffsetGap | None:
        """Record a delivery; the gap it reveals, if any (an open one for a first sight)."""
        key = (topic, partition)
        expected = self._next.get(key)
        self._next[key] = offset + 1 if expected is None else max(expected, offset + 1)
        if expected is None:
            return OffsetGap(topic, partition, None, offset)
        if offset > expected:
            return OffsetGap(topic, partition, expected, offset)
        return None

    def scan(self, deliveries: Iterable[tuple[str, int, int]]) -> list[tuple[int, OffsetGap]]:
        """`observe` a batch of (topic, partition, offset); each gap with the index of the
        delivery that revealed it (its missing records belong just before that delivery)."""
        found: list[tuple[int, OffsetGap]] = []
        for index, (topic, partition, offset) in enumerate(deliveries):
            gap = self.observe(topic, partition, offset)
            if gap is not None:
                found.append((index, gap))
        return found

    def forget(self, topic: str, partition: int) -> None:
        self._next.pop((topic, partition), None)


def splice(items: Sequence[T], before: Mapping[int, Sequence[T]]) -> list[T]:
    """``items`` with ``before[i]`` inserted just ahead of ``items[i]``: a batch with its repaired
    records in offset order per partition."""
    out: list[T] = []
    for index, item in enumerate(items):
        out.extend(before.get(index, ()))
        out.append(item)
    return out
