"""The shared-memory follower: every worker's view also holds the memory every worker needs.

A worker's view holds the memory of the engram.memory partitions it owns: its own users'. A
request may also need memory that hashes to other partitions: the shared layers (TEAM,
ORGANIZATION, SYSTEM) and the code graphs keyed by repo (processors/sharing.py). The owner's memory
agent replicates exactly that part to engram.memory.shared (streams/agents/stores.py: `Replica`),
and every worker reads that topic in full, from its beginning, the way a Kafka Streams GlobalKTable
is restored: a confluent-kafka consumer thread, manually assigned to every partition (no group
join, no commits). Decoded records go to the event loop in batches, through the replica's own
watermarks (`ContextService.follow`). The follower feeds the VIEW only; the stores (Qdrant, the
graph store) are written by the owners from engram.memory.

Why a replica topic and not reads from Qdrant or the graph store with the ReBAC pre-filters: the
compile path is in process (ARCHITECTURE.md, "State"): PPR, BM25 and the neighbourhoods run over
the view's arrays, and a store round trip per request is what the view exists to avoid (the
graph store's System 2 read alone took 15-25 ms in the demo, against a 50 ms budget). And why not
follow the other workers' engram.memory partitions, as this module did before: every worker then
read and held all of memory, every user's included, so partitions scaled throughput but not
memory. Now a worker holds its users' memory plus the shared part, and reads only that part of
the others' traffic.

A worker's own shared memory reaches its view twice, from its memory agent and from the replica:
upserts are idempotent by id, and the replica carries removals in the owner's order.

A partition newly assigned to the memory agent (a rebalance, or a worker whose event log does not
hold it) starts past what the view has of it: `ViewCatchUp` reads the partition back from the
broker, from the view's watermark + 1, or from the beginning when the view holds nothing of it,
before the memory agent's first batch reaches the view (``engram_offset_gaps_total{agent=
"engram.view"}``).

Stand-in profile (streams/profile.py): a moderate fetch wait (`infra.standins.STANDIN_FETCH_MAX_WAIT_MS`,
the Faust consumer's), not the request path's short one: memory is the busiest topic, and a short
wait makes tansu re-scan while it waits and starves an ingest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

from confluent_kafka import OFFSET_BEGINNING, Consumer

from engram.processors.intake import Accepted, admit
from engram.schemas.codec import AvroCodec
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import MemoryEvent
from engram.streams.assigned import POLL_S, AssignedReader, available
from engram.streams.config import EngramConfig
from engram.streams.edge import record_of_message
from engram.streams.metrics import EngramMetrics
from engram.streams.ranges import RangeReader, RangeReadError

logger = logging.getLogger(__name__)

# Batches handed to the loop and not applied yet; the thread waits rather than queue a backlog.
MAX_PENDING_BATCHES: Final = 4

StartOffsets = Mapping[int, "int | None"]  # partition -> first offset to read (None: the beginning)


MemoryRecord = Record[MemoryEvent]


def decoded(codec: Any, records: Iterable[RawRecord]) -> list[MemoryRecord]:
    """The records that decode as MemoryEvents, decoded."""
    out: list[MemoryRecord] = []
    for record in records:
        verdict = admit(codec, "MemoryEvent", record.value)
        if isinstance(verdict, Accepted):
            out.append(record.decoded(verdict.record))
    return out


@dataclass
class MemoryFollower(AssignedReader[list[MemoryRecord]]):
    """A confluent-kafka consumer thread over the memory partitions this worker does not own.

    ``settings`` are extra librdkafka settings (`follower_settings`). ``assign`` (on the loop)
    names the partitions and where each starts; partitions it already follows keep their
    position. At most `MAX_PENDING_BATCHES` delivered batches wait for `release`.
    """

    codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    _pending: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(MAX_PENDING_BATCHES))

    thread_name = "engram-memory-follower"
    stopped_message = "shared-memory follower stopped; the view misses what other workers replicate"

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return {**super().consumer_settings(), "auto.offset.reset": "earliest"}

    def assign(self, starts: StartOffsets) -> None:
        """Follow exactly these partitions, each from its offset (None: the beginning)."""
        self.assign_from({p: OFFSET_BEGINNING if start is None else start for p, start in starts.items()})

    def release(self) -> None:
        """A delivered batch was applied (or dropped): the thread may hand on another."""
        self._pending.release()

    def fetch(self, consumer: Consumer) -> list[MemoryRecord] | None:
        """One fetched batch, holding a pending slot when it is not None."""
        if not self._pending.acquire(timeout=POLL_S):
            return None
        # Only the decodable records: the owner dead-letters the rest and the watermark jumps them.
        batch = decoded(self.codec, [record_of_message(m) for m in available(consumer)])
        if not batch:
            self._pending.release()
            return None
        return batch


@dataclass
class ViewCatchUp:
    """Reads back the engram.memory offsets the view is behind on, where the store agent's batch
    begins past the view's watermark (see the module docstring)."""

    reader: RangeReader
    topic: str
    metrics: EngramMetrics
    codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))

    async def read(self, behind: Mapping[int, tuple[int, int]]) -> list[MemoryRecord]:
        """The decodable records of each ``partition -> (start, end)`` range, in offset order."""
        if not behind:
            return []
        return await asyncio.to_thread(self._read, behind)

    def _read(self, behind: Mapping[int, tuple[int, int]]) -> list[MemoryRecord]:
        out: list[MemoryRecord] = []
        for partition, (start, end) in sorted(behind.items()):
            try:
                fetched = self.reader.read(self.topic, partition, start, end)
            except RangeReadError:  # the view goes without them; the stores have them
                logger.exception("the view could not read back %s[%d] %d..%d", self.topic, partition, start, end - 1)
                continue
            found = decoded(self.codec, fetched)
            if found:  # (a range of dead letters only is no gap: the owner dead-lettered them)
                logger.warning(
                    "the view was behind on %s[%d]: read offsets %d..%d back", self.topic, partition, start, end - 1
                )
                self.metrics.offset_gaps.labels(self.topic, "engram.view").inc()
            out.extend(found)
        return out


def view_catch_up(config: EngramConfig, metrics: EngramMetrics) -> ViewCatchUp:
    """The worker's `ViewCatchUp` over engram.memory (its reader never joins a group)."""
    reader = RangeReader(config.bootstrap_servers, f"{config.app_id}-view-catch-up")
    return ViewCatchUp(reader, config.topics.memory, metrics)


def follower_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """The broker profile's: nothing extra on Kafka (it answers a fetch as soon as data arrives);
    on the stand-in the moderate fetch wait of the Faust consumer (see the module docstring)."""
    return config.profile.follower_settings()


def memory_follower(config: EngramConfig) -> MemoryFollower:
    """The worker's follower of the replica topic, with `follower_settings`."""
    return MemoryFollower(
        config.bootstrap_servers, config.topics.shared, f"{config.app_id}-memory-follower", follower_settings(config)
    )


class TaskRunner(Protocol):
    """What the follower needs of a Faust app: a task that runs while the worker runs."""

    def task(self, fun: Callable[[], Awaitable[None]]) -> Any: ...


def register_follower(
    app: TaskRunner,
    partitions: int,
    follower: MemoryFollower,
    apply: Callable[[list[MemoryRecord]], None],
    start: Callable[[int], int | None],
    on_follow: Callable[[int], None] | None = None,
) -> Callable[[], Awaitable[None]]:
    """Run ``follower`` while the worker runs, over every partition of the replica topic.

    ``apply`` runs on the loop for each batch; ``start`` gives a partition's first offset to read
    (the view's replica watermark + 1); ``on_follow`` learns how many partitions are followed.
    """

    async def follow_memory() -> None:
        loop = asyncio.get_running_loop()

        def applied(batch: list[MemoryRecord]) -> None:
            try:
                apply(batch)
            finally:
                follower.release()

        def deliver(batch: list[MemoryRecord]) -> None:
            try:
                loop.call_soon_threadsafe(applied, batch)
            except RuntimeError:  # the loop closed: the worker is stopping
                follower.release()

        follower.start(deliver)
        follower.assign({p: start(p) for p in range(partitions)})
        if on_follow is not None:
            on_follow(partitions)
        try:
            await asyncio.Event().wait()  # until the worker stops (cancelled)
        finally:
            await asyncio.to_thread(follower.stop)

    app.task(follow_memory)
    return follow_memory
