"""Qdrant unavailable, through a fault-injecting adapter (issue 19): the memory agent's commit holds
its batch unacknowledged, backs off without blocking the loop and without exiting, and once Qdrant
is back applies everything exactly once (the same content as a run that never saw the outage)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from engram.schemas.records import MemoryEvent
from engram.sinks.base import SinkConfig, SinkTransientError
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.sink import QdrantSink
from engram.sinks.qdrant.store import VectorStore
from engram.streams.commit import Batch, CommitTargets, OutagePolicy, commit_batch
from engram.streams.metrics import EngramMetrics
from tests.sinks.events import Workload, as_items, conversation

WRITES = ("upsert", "delete", "delete_where", "set_payload", "ensure_collection")


class Unavailable:
    """A VectorStore whose writes fail as a connection refused would (``SinkTransientError``)
    while ``down``; everything else is the real store's."""

    def __init__(self, inner: VectorStore) -> None:
        self.inner = inner
        self.down = False
        self.refused = 0

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self.inner, name)
        if name not in WRITES:
            return attribute

        def write(*args: Any, **kwargs: Any) -> Any:
            if self.down:
                self.refused += 1
                msg = "qdrant: connection refused"
                raise SinkTransientError(msg)
            return attribute(*args, **kwargs)

        return write


def test_an_unavailable_qdrant_is_ridden_out_and_everything_applied_once(tmp_path: Path) -> None:
    events: list[MemoryEvent] = conversation(Workload(users=2, turns_per_user=12, dim=8))
    items = as_items(events)
    half = len(items) // 2
    clean = QdrantSink(EdgeVectorStore(tmp_path / "clean"))
    clean.setup()
    for item in items:
        clean.add(item)
    clean.flush()
    expected = clean.content_hash()
    clean.close()

    store = Unavailable(EdgeVectorStore(tmp_path / "store"))
    sink = QdrantSink(store, sink_config=SinkConfig(max_retries=1, backoff_initial_s=0.0), sleep=lambda _s: None)
    sink.setup()
    metrics = EngramMetrics()
    targets = CommitTargets(stores=[("qdrant", sink)], metrics=metrics, outage=OutagePolicy(60.0, 0.02, 0.05))
    acknowledged: list[int] = []

    async def ack() -> None:
        acknowledged.append(len(acknowledged) + 1)

    async def heartbeat(beats: list[int]) -> None:  # the loop keeps running while the store is down
        while True:
            beats.append(1)
            await asyncio.sleep(0.01)

    async def scenario() -> None:
        await commit_batch(Batch(stored=items[:half]), targets, ack)
        store.down = True
        beats: list[int] = []
        pulse = asyncio.create_task(heartbeat(beats))
        held = asyncio.create_task(commit_batch(Batch(stored=items[half:]), targets, ack))
        await asyncio.sleep(0.5)
        assert not held.done() and acknowledged == [1] and store.refused >= 3
        assert len(beats) > 20  # no sleep on the loop
        assert metrics.registry.get_sample_value("engram_store_up", {"sink": "qdrant"}) == 0
        store.down = False
        await asyncio.wait_for(held, 10.0)
        pulse.cancel()
        assert acknowledged == [1, 2]
        assert metrics.registry.get_sample_value("engram_store_up", {"sink": "qdrant"}) == 1

    try:
        asyncio.run(scenario())
        assert sink.content_hash() == expected
    finally:
        sink.close()
