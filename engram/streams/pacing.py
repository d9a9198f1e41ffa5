"""Backpressure: the ingest agents take a batch only while the memory agent keeps up.

An ingest batch of 2,000 turns costs about a third of the CPU of the memory batches it derives
(facts, dreams, the sinks, the view), and both agents share one worker's loop. Unpaced, the front
ran about 5x ahead of the memory agent: measured with `engram bench ingest --turns 300000`, all
turns were ingested after 16 minutes while the sinks had applied 216k of 1.21M memory events, the
broker held the backlog (tansu at 4.2 GB), and a turn reached the view only when the drain did.

`MemoryPace` bounds that backlog on the worker: the engram.memory records written to the
partitions this worker's memory agent owns and not yet applied by it. A partition's end is the
larger of its fetch high-watermark (what other writers added) and the end this worker's producer
was acknowledged (the fetch may be paused while the agent's buffer is full). Before an ingest batch
is taken in, `admit` waits while the backlog is above ``max_backlog``: freshness (turn to view)
and the broker's backlog stay bounded, and the work is the same.

The wait is never a deadlock: it ends when the backlog drops, when the worker rebalances (Faust
waits for the agents to go idle), or after ``max_wait_s``, when the batch is taken anyway and
counted (a memory agent that is stuck, for example on a store outage, should be seen, not hidden).
Partitions the agent has not applied a batch of since it was assigned them are not counted yet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the config imports the policy; faust and the metrics load with the worker
    from faust.types import TP

    from engram.schemas.record import RawRecord
    from engram.streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)

PartitionEnd = Callable[[int], int | None]  # a partition of engram.memory -> an end offset (None: unknown)


@dataclass(frozen=True, slots=True)
class PacePolicy:
    """``max_backlog``: engram.memory records not yet applied on this worker's partitions above
    which ingest waits (0: never waits). ``max_wait_s``: the longest one wait lasts. ``poll_s``: how
    often a wait looks again when the memory agent finished no batch meanwhile."""

    max_backlog: int = 20_000
    max_wait_s: float = 60.0
    poll_s: float = 0.25

    def __post_init__(self) -> None:
        if self.max_backlog < 0 or self.max_wait_s <= 0 or self.poll_s <= 0:
            msg = f"pacing needs max_backlog >= 0 and positive waits, got {self}"
            raise ValueError(msg)


@dataclass
class MemoryPace:
    """The memory agent's backlog on this worker, and the wait ingest takes on it (on the loop)."""

    topic: str
    policy: PacePolicy
    ends: Sequence[PartitionEnd]  # e.g. the consumer's fetch high-watermark, the producer's acknowledged end
    metrics: EngramMetrics
    rebalancing: Callable[[], bool] = lambda: False
    next_offsets: dict[int, int] = field(default_factory=dict)  # partition -> next offset the agent applies
    _progress: asyncio.Event = field(default_factory=asyncio.Event)

    def applied(self, records: Iterable[RawRecord]) -> None:
        """The memory agent applied ``records`` (a committed batch): its positions move on."""
        for record in records:
            if record.topic == self.topic and record.offset >= self.next_offsets.get(record.partition, 0):
                self.next_offsets[record.partition] = record.offset + 1
        self.metrics.memory_backlog.set(self.backlog())
        self._progress.set()

    def owned(self, partitions: Iterable[TP]) -> None:
        """The partitions assigned now: positions of the others are forgotten."""
        mine = {tp.partition for tp in partitions if tp.topic == self.topic}
        self.next_offsets = {p: offset for p, offset in self.next_offsets.items() if p in mine}
        self._progress.set()

    def backlog(self) -> int:
        """Records on the owned partitions past what the agent applied."""
        total = 0
        for partition, position in self.next_offsets.items():
            end = max((e for e in (end_of(partition) for end_of in self.ends) if e is not None), default=position)
            total += max(0, end - position)
        return total

    async def admit(self) -> float:
        """Wait while the backlog is above the bound (see the module doc); the seconds waited."""
        if not self._behind():
            return 0.0
        loop = asyncio.get_running_loop()
        started = loop.time()
        while self._behind():
            left = self.policy.max_wait_s - (loop.time() - started)
            if left <= 0:
                self.metrics.pace_timeouts.inc()
                logger.warning("memory backlog %d still above %d after %.0fs; taking the next ingest batch",
                               self.backlog(), self.policy.max_backlog, self.policy.max_wait_s)  # fmt: skip
                break
            self._progress.clear()
            with contextlib.suppress(TimeoutError):  # look again: the ends may move without a batch
                await asyncio.wait_for(self._progress.wait(), timeout=min(self.policy.poll_s, left))
        waited = loop.time() - started
        self.metrics.paced_seconds.inc(waited)
        return waited

    def _behind(self) -> bool:
        limit = self.policy.max_backlog
        if limit == 0:
            return False
        backlog = self.backlog()
        self.metrics.memory_backlog.set(backlog)
        return backlog > limit and not self.rebalancing()
