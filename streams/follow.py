"""The memory follower: this worker's view also learns memory stored on partitions it does not own.

engram.memory is keyed by user *or* by repo, and partitioned. A worker's store agent applies only
the memory partitions Faust assigned to it, yet a request (keyed by user) may need memory keyed
by a repo (the code graph, USER-layer code included) or shared-layer memory (TEAM, ORGANIZATION,
SYSTEM) that hashes to another worker's partition. The follower is a confluent-kafka consumer
thread, manually assigned (no group join, no commits), to every engram.memory partition the
worker's store agent does NOT hold. Each partition starts at the view's watermark + 1 (or at the
beginning when the view holds nothing of it: `processors.retrieval.applied.AppliedOffsets`,
seeded at start from the event log). Decoded records go to the event loop in batches, where they
pass the same watermark gate and SLB bookkeeping as the store agent's (`ContextService.follow`).
The follower feeds the VIEW only; the sinks (Qdrant, the graph store) stay written by the owner.
On a single worker the store agent holds every partition, so the follower holds nothing.

It follows Faust's assignment: on each `on_partitions_assigned` it takes the complement of the
memory partitions assigned here. Revocations alone change nothing: Faust's eager rebalance always
ends in an assignment, and following a partition only until it comes back would reread it.

Memory cost, honestly: every worker's view then holds all of engram.memory, not a 1/N share: its
own users' memory, every repo's code graph, every shared layer, and the USER-layer memory of
other workers' users too (ReBAC keeps the latter out of its answers). Skipping other users'
USER-layer upserts on followed partitions would save most of that, but a user whose partition
moves to this worker at a rebalance would then be missing the history the store agent does not
replay (it resumes at the group's committed offset). Correctness first: nothing is skipped.

A partition handed from the follower to the store agent at a rebalance resumes at the group's
committed offset, which can lie past what the follower had applied (it lags by about a fetch
wait), or far past it when the view's last record of the partition came from an old event log.
`ViewCatchUp` closes that: before the store agent's batch reaches the view, the offsets between
the view's watermark and the batch are read back from the broker and applied first, in order
(counted in ``engram_offset_gaps_total{agent="engram.view"}``).

Stand-in profile (streams/profile.py): a moderate fetch wait (`infra.standins.STANDIN_FETCH_MAX_WAIT_MS`,
the Faust consumer's), not the request path's short one: memory is the busiest topic and comes in
one-record batches, over which a short wait makes tansu re-scan and starves an ingest.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import OFFSET_BEGINNING, Consumer

from processors.intake import Accepted, admit
from processors.retrieval.applied import OffsetEvent
from schemas.codec import AvroCodec
from streams.assigned import POLL_S, AssignedReader, available
from streams.config import EngramConfig
from streams.gaps import GapRepairError, RangeReader
from streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)

# Batches handed to the loop and not applied yet; the thread waits rather than queue a backlog.
MAX_PENDING_BATCHES: Final = 4

StartOffsets = Mapping[int, "int | None"]  # partition -> first offset to read (None: the beginning)


def decoded(codec: Any, rows: Iterable[tuple[int, int, bytes | None]]) -> list[OffsetEvent]:
    """The ``(partition, offset, value)`` rows that decode as MemoryEvents, as `OffsetEvent`s."""
    out: list[OffsetEvent] = []
    for partition, offset, value in rows:
        verdict = admit(codec, "MemoryEvent", value)
        if isinstance(verdict, Accepted):
            out.append((partition, offset, verdict.record))
    return out


@dataclass
class MemoryFollower(AssignedReader[list[OffsetEvent]]):
    """A confluent-kafka consumer thread over the memory partitions this worker does not own.

    ``settings`` are extra librdkafka settings (`follower_settings`). ``assign`` (on the loop)
    names the partitions and where each starts; partitions it already follows keep their
    position. At most `MAX_PENDING_BATCHES` delivered batches wait for `release`.
    """

    codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    _pending: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(MAX_PENDING_BATCHES))

    thread_name = "engram-memory-follower"
    stopped_message = "memory follower stopped; the view holds only this worker's partitions"

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return {**super().consumer_settings(), "auto.offset.reset": "earliest"}

    def assign(self, starts: StartOffsets) -> None:
        """Follow exactly these partitions, each from its offset (None: the beginning)."""
        self.assign_from({p: OFFSET_BEGINNING if start is None else start for p, start in starts.items()})

    def release(self) -> None:
        """A delivered batch was applied (or dropped): the thread may hand on another."""
        self._pending.release()

    def fetch(self, consumer: Consumer) -> list[OffsetEvent] | None:
        """One fetched batch, holding a pending slot when it is not None."""
        if not self._pending.acquire(timeout=POLL_S):
            return None
        # Only the decodable records: the owner dead-letters the rest and the watermark jumps them.
        rows = ((m.partition() or 0, m.offset() or 0, m.value()) for m in available(consumer))
        batch = decoded(self.codec, rows)
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

    async def read(self, behind: Mapping[int, tuple[int, int]]) -> list[OffsetEvent]:
        """The decodable records of each ``partition -> (start, end)`` range, in offset order."""
        if not behind:
            return []
        return await asyncio.to_thread(self._read, behind)

    def _read(self, behind: Mapping[int, tuple[int, int]]) -> list[OffsetEvent]:
        out: list[OffsetEvent] = []
        for partition, (start, end) in sorted(behind.items()):
            try:
                fetched = self.reader.read(self.topic, partition, start, end)
            except GapRepairError:  # the view goes without them; the stores have them
                logger.exception("the view could not read back %s[%d] %d..%d", self.topic, partition, start, end - 1)
                continue
            found = decoded(self.codec, ((partition, m.offset, m.value) for m in fetched))
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
    """The worker's follower of engram.memory, with `follower_settings`."""
    return MemoryFollower(
        config.bootstrap_servers, config.topics.memory, f"{config.app_id}-memory-follower", follower_settings(config)
    )


def followed_partitions(partitions: int, held: set[int], start: Callable[[int], int | None]) -> dict[int, int | None]:
    """The complement of ``held`` over ``partitions``, each with where to start reading it."""
    return {p: start(p) for p in range(partitions) if p not in held}


def register_follower(
    app: Any,
    topic_name: str,
    partitions: int,
    follower: MemoryFollower,
    apply: Callable[[list[OffsetEvent]], None],
    start: Callable[[int], int | None],
    on_follow: Callable[[int], None] | None = None,
) -> Callable[[], Awaitable[None]]:
    """Run ``follower`` while the worker runs, over the memory partitions Faust did not assign here.

    ``apply`` runs on the loop for each batch; ``start`` gives a partition's first offset to read
    (the view's watermark + 1); ``on_follow`` learns how many partitions are followed.
    """

    async def on_assigned(_app: Any, assigned: Any, **_kwargs: Any) -> None:
        held = {tp.partition for tp in assigned if tp.topic == topic_name}
        starts = followed_partitions(partitions, held, start)
        follower.assign(starts)
        if on_follow is not None:
            on_follow(len(starts))

    async def follow_memory() -> None:
        loop = asyncio.get_running_loop()

        def applied(batch: list[OffsetEvent]) -> None:
            try:
                apply(batch)
            finally:
                follower.release()

        def deliver(batch: list[OffsetEvent]) -> None:
            try:
                loop.call_soon_threadsafe(applied, batch)
            except RuntimeError:  # the loop closed: the worker is stopping
                follower.release()

        follower.start(deliver)
        try:
            await asyncio.Event().wait()  # until the worker stops (cancelled)
        finally:
            await asyncio.to_thread(follower.stop)

    app.on_partitions_assigned.connect(on_assigned)
    app.task(follow_memory)
    return follow_memory
