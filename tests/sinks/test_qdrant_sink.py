"""`QdrantSink` end to end on both adapters: rebuild by replay, idempotence, crash mid-batch."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import cast

import pytest

from engram.processors.embedding.vectors import node_vector
from engram.schemas.records import NODE_UPSERTED, MemoryEvent, NodeUpserted
from engram.sinks.base import SinkConfig, SinkTransientError
from engram.sinks.qdrant.client import ClientVectorStore, QdrantServerConfig
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.plan import plan_batch
from engram.sinks.qdrant.sink import QdrantSink
from engram.sinks.qdrant.store import PointFilter, VectorPoint, VectorStore
from tests.sinks.events import Workload, as_items, conversation

REPO = Path(__file__).resolve().parents[2]
BIG = Workload(users=4, turns_per_user=750, concepts_per_user=5, dim=32, seed=11)  # 3,020 points
SMALL = Workload(users=2, turns_per_user=12, concepts_per_user=2, dim=8, seed=3)  # 28 points


def _apply(store: VectorStore, events: list[MemoryEvent], max_batch: int = 500) -> QdrantSink:
    sink = QdrantSink(store, sink_config=SinkConfig(max_batch=max_batch))
    sink.setup()
    for item in as_items(events):
        sink.add(item)
    sink.flush()
    return sink


def _expected_points(events: list[MemoryEvent]) -> Counter[str]:
    """Points per collection the log should leave: embedded nodes minus removed ones."""
    plan = plan_batch(events)
    return Counter({c: len(ids) for c, ids in plan.upserts.items() if ids})


def _edge_hash(folder: Path, events: list[MemoryEvent]) -> str:
    sink = _apply(EdgeVectorStore(folder), events)
    try:
        return sink.content_hash()
    finally:
        sink.close()


@pytest.fixture(scope="module")
def big_log() -> list[MemoryEvent]:
    return conversation(BIG)


@pytest.fixture(scope="module")
def big_sink(big_log: list[MemoryEvent], tmp_path_factory: pytest.TempPathFactory) -> Iterator[QdrantSink]:
    """The big log applied once to an edge store; the tests below only read it, or re-apply it."""
    sink = _apply(EdgeVectorStore(tmp_path_factory.mktemp("qdrant-big")), big_log)
    try:
        yield sink
    finally:
        sink.close()


def test_edge_replay_into_empty_stores_gives_identical_hashes(
    big_sink: QdrantSink, big_log: list[MemoryEvent], tmp_path: Path
) -> None:
    expected = _expected_points(big_log)
    assert {c: big_sink.store.count(c) for c in big_sink.store.collections()} == dict(expected)
    assert sum(expected.values()) == BIG.users * (BIG.turns_per_user - 1 + BIG.concepts_per_user)
    first = big_sink.content_hash()
    assert _edge_hash(tmp_path / "b", big_log) == first


def test_edge_reapplying_the_log_changes_nothing(big_sink: QdrantSink, big_log: list[MemoryEvent]) -> None:
    before = big_sink.content_hash()
    for item in as_items(big_log):
        big_sink.add(item)
    big_sink.flush()
    assert big_sink.content_hash() == before


def test_edge_tenant_and_layer_filters_and_dormancy(big_sink: QdrantSink, big_log: list[MemoryEvent]) -> None:
    store = big_sink.store
    turns = [cast(NodeUpserted, e["change"][1]) for e in big_log if e["change"][0] == NODE_UPSERTED]
    probe = next(t for t in turns if t["user_id"] == "user-2" and t["kind"] == "event" and t["layer"] == "TEAM")
    vector = node_vector(probe)
    assert vector is not None
    hits = store.search("engram_event", vector.tolist(), 10, PointFilter.tenant("user-2", ["TEAM"]))
    assert hits[0].id == probe["node_id"]
    assert hits[0].score == pytest.approx(1.0, abs=1e-5)
    assert {(h.payload["user_id"], h.payload["layer"]) for h in hits} == {("user-2", "TEAM")}

    user_turns = [t["node_id"] for t in turns if t["user_id"] == "user-2" and t["kind"] == "event"]
    payloads = {p.id: p.payload for p in store.scroll_all("engram_event")}
    assert payloads[user_turns[0]]["dormant"] == 1
    assert payloads[user_turns[1]]["dormant"] == 0
    awake = store.count("engram_event", PointFilter.tenant("user-2"))
    every = store.count("engram_event", PointFilter.tenant("user-2", include_dormant=True))
    assert (awake, every) == (BIG.turns_per_user - 2, BIG.turns_per_user - 1)


_CRASH_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from engram.sinks.qdrant.edge import EdgeVectorStore
    from engram.sinks.qdrant.plan import plan_batch
    from engram.sinks.qdrant.sink import QdrantSink
    from tests.sinks.events import Workload, conversation

    events = conversation(Workload(users=2, turns_per_user=300, concepts_per_user=3, dim=16, seed=5))
    sink = QdrantSink(EdgeVectorStore(Path(sys.argv[1])))
    sink.setup()
    half = plan_batch(events[: len(events) // 2])
    sink.apply(half)
    print(sum(len(p) for p in half.upserts.values()), flush=True)
    os._exit(9)  # killed mid-log: no flush of the rest, no close, the folder lock dies with us
    """
)


def test_edge_worker_killed_mid_batch_then_replayed_loses_and_duplicates_nothing(tmp_path: Path) -> None:
    folder = tmp_path / "crashed"
    run = subprocess.run(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", _CRASH_SCRIPT, str(folder)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 9, run.stderr
    assert int(run.stdout.strip()) > 0
    events = conversation(Workload(users=2, turns_per_user=300, concepts_per_user=3, dim=16, seed=5))
    recovered = _apply(EdgeVectorStore(folder), events)
    try:
        ids = [p.id for c in recovered.store.collections() for p in recovered.store.scroll_all(c)]
        assert len(ids) == len(set(ids)) == sum(_expected_points(events).values())
        recovered_hash = recovered.content_hash()
    finally:
        recovered.close()
    assert recovered_hash == _edge_hash(tmp_path / "clean", events)


def test_client_local_mode_replay_and_crash_mid_batch(tmp_path: Path) -> None:
    events = conversation(SMALL)
    clean = _apply(ClientVectorStore(QdrantServerConfig(path=str(tmp_path / "clean"))), events, max_batch=7)
    try:
        assert {c: clean.store.count(c) for c in clean.store.collections()} == dict(_expected_points(events))
        clean_hash = clean.content_hash()
    finally:
        clean.close()

    crashed = QdrantSink(ClientVectorStore(QdrantServerConfig(path=str(tmp_path / "crashed"))))
    crashed.setup()
    crashed.apply(plan_batch(events[: len(events) // 2]))  # half a batch, then the worker "dies"
    crashed.close()
    replayed = _apply(ClientVectorStore(QdrantServerConfig(path=str(tmp_path / "crashed"))), events, max_batch=7)
    try:
        assert replayed.content_hash() == clean_hash
    finally:
        replayed.close()


class _FlakyStore(EdgeVectorStore):
    """Fails the first upsert as a dropped connection would."""

    def __init__(self, root: Path) -> None:
        super().__init__(root)
        self.failures = 1

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        if self.failures:
            self.failures -= 1
            msg = "connection reset"
            raise SinkTransientError(msg)
        super().upsert(collection, points)


def test_transient_failure_is_retried_and_the_batch_still_lands(tmp_path: Path) -> None:
    events = conversation(SMALL)
    waits: list[float] = []
    store = _FlakyStore(tmp_path / "flaky")
    sink = QdrantSink(store, sink_config=SinkConfig(max_batch=1000, backoff_initial_s=0.25), sleep=waits.append)
    sink.setup()
    try:
        for item in as_items(events):
            sink.add(item)
        assert sink.flush() == {("engram.memory", 0): len(events) - 1}
        assert waits == [0.25]
        assert sum(store.count(c) for c in store.collections()) == sum(_expected_points(events).values())
    finally:
        sink.close()
