"""`QdrantSink`: applies ``engram.memory`` MemoryEvents to a `VectorStore`, idempotently.

Each node kind has its own collection (``engram_event``, ``engram_concept``, ...); a point's id
is the node id (a uuid string) and its vector the node's embedding. A batch is coalesced per
point id (`sinks.qdrant.plan`) and written as deletes, upserts in chunks of
``QdrantSinkConfig.upsert_chunk``, then dormancy flags, so that the offsets the caller commits
afterwards survive a crash of the worker (see ``QdrantSinkConfig.flush_every_s``). Replaying the
log into an empty store rebuilds it; a batch replayed after a crash overwrites the same points by
id and adds nothing.

A SubjectErased deletes every point whose payload ``user_id`` is the user, dormant ones included,
in every collection under the sink's prefix (one filter delete per collection), between the
writes planned before it and those after it. Filter deletes are idempotent too, so a batch
replayed after a crash anywhere in that sequence ends where a clean run does.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

from engram.processors.trust.erasure import KEPT_KIND_PREFIX
from engram.schemas.records import MemoryEvent
from engram.sinks.base import BatchingSink, SinkBatch, SinkConfig
from engram.sinks.qdrant.hashing import vector_content_hash
from engram.sinks.qdrant.plan import DEFAULT_PREFIX, VectorBatchPlan, VectorWrites, plan_batch
from engram.sinks.qdrant.store import PointFilter, VectorDimensionError, VectorStore


@dataclass(frozen=True, slots=True)
class QdrantSinkConfig:
    """``upsert_chunk`` points per engine call; ``hash_digits`` decimals of vectors in the content hash.

    ``flush_every_s``: the engine's write-ahead log already keeps every acknowledged write across a
    process crash (tests/sinks/test_qdrant_sink.py kills a worker mid-log to show it); an engine
    flush (fsync of segments, ~150 ms here) guards against power loss as well, and runs at the end
    of a batch at most this often. 0 flushes after every batch.
    """

    collection_prefix: str = DEFAULT_PREFIX
    upsert_chunk: int = 512
    hash_digits: int = 5
    flush_every_s: float = 5.0


@dataclass(slots=True)
class QdrantSinkStats:
    """Counters since construction (points, not events; ``erasures``: SubjectErased applied)."""

    batches: int = 0
    upserted: int = 0
    deleted: int = 0
    flagged: int = 0
    skipped: int = 0
    erasures: int = 0


class QdrantSink(BatchingSink[MemoryEvent]):
    """Vectors of Engram's nodes, one collection per kind, in a `VectorStore`."""

    def __init__(
        self,
        store: VectorStore,
        config: QdrantSinkConfig | None = None,
        sink_config: SinkConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(sink_config, sleep)
        self.store = store
        self.vector_config = config or QdrantSinkConfig()
        self.stats = QdrantSinkStats()
        self._clock = time.monotonic
        self._last_flush = self._clock()

    def setup(self) -> None:
        self.store.open()

    def close(self) -> None:
        """Flush and release the store (`VectorStore.close` flushes)."""
        self.store.close()

    def write(self, batch: SinkBatch[MemoryEvent]) -> None:
        self.apply(plan_batch((item.value for item in batch), self.vector_config.collection_prefix))

    def apply(self, plan: VectorBatchPlan) -> None:
        """Write one plan in batch order: its writes, then per erasure the delete and the writes
        after it; then make it durable."""
        self._write(plan)
        for erasure in plan.erasures:
            self._erase(erasure.user_id)
            self._write(erasure.then)
        if self._clock() - self._last_flush >= self.vector_config.flush_every_s:
            self.store.flush()
            self._last_flush = self._clock()
        self.stats.batches += 1
        self.stats.skipped += plan.skipped

    def _write(self, writes: VectorWrites) -> None:
        """One coalesced group: deletes, upserts, flags."""
        store = self.store
        for collection, ids in sorted(writes.deletes.items()):
            if ids:
                store.delete(collection, sorted(ids))
                self.stats.deleted += len(ids)
        chunk = self.vector_config.upsert_chunk
        for collection, by_id in sorted(writes.upserts.items()):
            points = [by_id[i] for i in sorted(by_id)]
            if not points:
                continue
            dims = {len(p.vector) for p in points}
            if len(dims) != 1:
                msg = f"points for {collection} have mixed dimensions {sorted(dims)}"
                raise VectorDimensionError(msg)
            store.ensure_collection(collection, dims.pop())
            for start in range(0, len(points), chunk):
                store.upsert(collection, points[start : start + chunk])
            self.stats.upserted += len(points)
        if writes.flags:
            self._apply_flags(writes.flags)

    def _erase(self, user_id: str) -> None:
        """Delete every point of ``user_id`` in the collections this sink names (its prefix):
        another application's collections on a shared server are not ours to touch, nor are the
        code collections (code stays on erasure: processors/trust/erasure.py)."""
        prefix = self.vector_config.collection_prefix
        code = f"{prefix}{KEPT_KIND_PREFIX}"
        subject = PointFilter.subject(user_id)
        for collection in self.store.collections():
            if collection.startswith(prefix) and not collection.startswith(code):
                self.store.delete_where(collection, subject)
        self.stats.erasures += 1

    def _apply_flags(self, flags: dict[str, bool]) -> None:
        # A dormancy event names the node, not its kind: try each collection; the store only
        # touches ids it holds.
        for value in (True, False):
            ids = sorted(i for i, flag in flags.items() if flag is value)
            if not ids:
                continue
            for collection in self.store.collections():
                self.stats.flagged += len(self.store.set_payload(collection, ids, {"dormant": int(value)}))

    def content_hash(self) -> str:
        """sha256 over every point of every collection (see `vector_content_hash`)."""
        return vector_content_hash(self.store, self.vector_config.hash_digits)
