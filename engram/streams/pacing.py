"""Backpressure: a worker stops fetching its input topics while its memory agent is behind.

An ingest batch of 2,000 turns costs about a third of the CPU of the memory batches it derives
(facts, dreams, the sinks, the view), and both agents share one worker's loop. Unpaced, the front
ran about 5x ahead of the memory agent: measured with `engram bench ingest --turns 300000`, all
turns were ingested after 16 minutes while the sinks had applied 216k of 1.21M memory events: the
broker held the backlog, and a turn reached the view only when the drain did.

`MemoryPace` bounds that backlog on the worker: the engram.memory records written to the
partitions this worker's memory agent owns and not yet applied by it. A partition's end is the
larger of its fetch high-watermark (what other writers added) and the end this worker's producer
was acknowledged (the fetch may be paused while the agent's buffer is full). While the backlog is
above ``max_backlog``, `steer` pauses the fetching of the worker's input partitions (turns, code
changes); once it is back under, it resumes them. The broker keeps the turns meanwhile.

Pausing the fetch, not the agent, is what keeps this free of deadlock: Faust hands every fetched
message to its stream in one loop, and a stream whose buffer is full blocks that loop until it
drains, the memory agent's messages included. An ingest agent that waited for the memory agent
inside its stream therefore starved it (measured: the first version of this, which did, stalled a
300k-turn run within minutes). The ingest agent still finishes the turns it had fetched, so the
backlog passes the bound by what they derive. The fetch is paused in the Kafka client, not in
Faust's set of active partitions, which would drop the rest of a batch being delivered
(streams/repairs/pausing.py).

While the worker rebalances or recovers its tables, Faust pauses and resumes partitions itself, so
`steer` leaves them alone. Partitions the memory agent has not applied a batch of since they were
assigned are not counted yet.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from faust.types import TP

from engram.schemas.record import RawRecord
from engram.streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)

PartitionEnd = Callable[[int], int | None]  # a partition of engram.memory -> an end offset (None: unknown)


@dataclass(frozen=True, slots=True)
class PacePolicy:
    """``max_backlog``: engram.memory records not yet applied on this worker's partitions above
    which its input partitions are paused (0: never; the worker's is ENGRAM_INGEST_MAX_BACKLOG).
    ``check_s``: how often the backlog is looked at besides after each batch (the ends move with
    other writers' records too)."""

    max_backlog: int
    check_s: float = 0.25

    def __post_init__(self) -> None:
        if self.max_backlog < 0 or self.check_s <= 0:
            msg = f"pacing needs max_backlog >= 0 and check_s > 0, got {self}"
            raise ValueError(msg)


class InputPartitions(Protocol):
    """The worker's input partitions, as its consumer fetches them."""

    def assigned(self) -> set[TP]: ...

    def pause(self, partitions: set[TP]) -> None: ...

    def resume(self, partitions: set[TP]) -> None: ...

    def settling(self) -> bool:
        """True while a rebalance or table recovery is pausing and resuming partitions itself."""
        ...


@dataclass
class MemoryPace:
    """The memory agent's backlog on this worker, and the input partitions paused on it (on the loop)."""

    topic: str
    policy: PacePolicy
    ends: Sequence[PartitionEnd]  # e.g. the consumer's fetch high-watermark, the producer's acknowledged end
    inputs: InputPartitions
    metrics: EngramMetrics
    clock: Callable[[], float] = time.monotonic
    next_offsets: dict[int, int] = field(default_factory=dict)  # partition -> next offset the agent applies
    paused: set[TP] = field(default_factory=set)
    paused_since: float | None = None

    def applied(self, records: Iterable[RawRecord]) -> None:
        """The memory agent applied ``records`` (a committed batch): its positions move on."""
        for record in records:
            if record.topic == self.topic and record.offset >= self.next_offsets.get(record.partition, 0):
                self.next_offsets[record.partition] = record.offset + 1
        self.steer()

    def owned(self, partitions: Iterable[TP]) -> None:
        """The partitions assigned now: positions of the others are forgotten."""
        mine = {tp.partition for tp in partitions if tp.topic == self.topic}
        self.next_offsets = {p: offset for p, offset in self.next_offsets.items() if p in mine}

    def backlog(self) -> int:
        """Records on the owned partitions past what the agent applied."""
        total = 0
        for partition, position in self.next_offsets.items():
            end = max((e for e in (end_of(partition) for end_of in self.ends) if e is not None), default=position)
            total += max(0, end - position)
        return total

    def steer(self) -> bool:
        """Pause the input partitions while the backlog is above the bound, resume them once it
        is not; whether they are paused now."""
        if self.policy.max_backlog == 0 or self.inputs.settling():
            return self.paused_since is not None
        backlog = self.backlog()
        self.metrics.memory_backlog.set(backlog)
        if backlog > self.policy.max_backlog:
            # Every time, not once: a recovery that ended meanwhile resumed every partition.
            self.paused = self.inputs.assigned()
            self.inputs.pause(self.paused)
            if self.paused_since is None:
                self.paused_since = self.clock()
                logger.info("memory backlog %d above %d: input partitions paused", backlog, self.policy.max_backlog)
        elif self.paused_since is not None:
            self.inputs.resume(self.paused & self.inputs.assigned())  # not what a rebalance took away
            self.metrics.paced_seconds.inc(self.clock() - self.paused_since)
            self.paused, self.paused_since = set(), None
        return self.paused_since is not None
