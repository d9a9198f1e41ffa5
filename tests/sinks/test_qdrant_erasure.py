"""SubjectErased in `QdrantSink`, on both adapters: every point of the user goes, in every
collection the sink names (dormant points included); the other user's points stay as they were;
an erasure inside a batch keeps batch order; replays and crashes mid-batch end where a clean run
does."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

import pytest

from engram.processors.embedding.vectors import to_wire
from engram.schemas.events import memory_event, node_dormant, node_upserted, stable_id
from engram.schemas.records import NODE_DORMANT, NODE_UPSERTED, MemoryEvent
from engram.sinks.base import SinkConfig
from engram.sinks.qdrant.client import ClientVectorStore, QdrantServerConfig
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.sink import QdrantSink
from engram.sinks.qdrant.store import PointFilter, SearchHit, StoredPoint, VectorPoint, VectorStore
from tests.sinks.events import T0_MS, Workload, as_items, conversation, fresh_content, subject_erased

REPO = Path(__file__).resolve().parents[2]
SMALL = Workload(users=2, turns_per_user=12, concepts_per_user=2, dim=8, seed=3)
GONE, STAYS = "user-0", "user-1"
FOREIGN = "other_app"  # a collection outside the sink's prefix on the same store
T_BATCH = T0_MS + 100_000

StoreFactory = Callable[[Path], VectorStore]
FACTORIES: dict[str, StoreFactory] = {
    "edge": lambda folder: EdgeVectorStore(folder),
    "client-local": lambda folder: ClientVectorStore(QdrantServerConfig(path=str(folder))),
}
Scan = dict[str, dict[str, StoredPoint]]
CODE = "engram_code_chunk"


def _base_log() -> list[MemoryEvent]:
    """Two users' concepts and turns (one of GONE's dormant), a kind only GONE has, and code GONE
    wrote (which stays: processors/trust/erasure.py)."""
    gist = node_upserted(
        stable_id("gist", GONE), "gist", "USER", T0_MS, text=f"gist of {GONE}", user_id=GONE, vector=to_wire([1.0] * 8)
    )
    code = node_upserted(
        stable_id("code", GONE),
        "code_chunk",
        "TEAM",
        T0_MS,
        text="def pay(): ...",
        user_id=GONE,
        vector=to_wire([8**-0.5] * 8),
    )
    return [*conversation(SMALL), *(memory_event(GONE, T0_MS, [], NODE_UPSERTED, n) for n in (gist, code))]


def _batch() -> list[MemoryEvent]:
    """GONE writes, is erased, and comes back: new turns and one of its old turn ids, re-used."""
    returned_id = stable_id("turn", GONE, 5)
    returned = node_upserted(
        returned_id, "event", "USER", T_BATCH, text=f"returned {GONE}", user_id=GONE, vector=to_wire([0.5] * 8)
    )
    before = fresh_content(GONE, "before", 3, 8, seed=21, t_ms=T_BATCH)
    before.append(memory_event(GONE, T_BATCH, [], NODE_DORMANT, node_dormant(stable_id("turn", GONE, 4), "idle")))
    after = fresh_content(GONE, "after", 2, 8, seed=22, t_ms=T_BATCH + 10)
    after.append(memory_event(GONE, T_BATCH + 20, [], NODE_UPSERTED, returned))
    after.append(memory_event(GONE, T_BATCH + 21, [], NODE_DORMANT, node_dormant(stable_id("after", GONE, 0), "idle")))
    return [*before, subject_erased(GONE, T_BATCH + 5, 99), *after]


def _feed(sink: QdrantSink, events: list[MemoryEvent], first_offset: int = 0) -> None:
    for item in as_items(events, first_offset=first_offset):
        sink.add(item)
    sink.flush()


def _sink(store: VectorStore, max_batch: int = 1000) -> QdrantSink:
    sink = QdrantSink(store, sink_config=SinkConfig(max_batch=max_batch))
    sink.setup()
    return sink


def _scan(store: VectorStore, user: str | None = None) -> Scan:
    """Every point of the sink's collections (of ``user`` only, if given), by collection and id."""
    return {
        c: {p.id: p for p in store.scroll_all(c) if user is None or p.payload["user_id"] == user}
        for c in store.collections()
        if c.startswith("engram_")
    }


def _assert_gone(store: VectorStore) -> None:
    points = [p for c, by_id in _scan(store).items() if c != CODE for p in by_id.values()]
    assert points, "the other user's points should still be there"
    assert [p.id for p in points if p.payload["user_id"] == GONE] == []
    assert [p.payload for p in points if GONE in json.dumps(p.payload)] == []  # texts, sessions, anything


@pytest.fixture(params=sorted(FACTORIES))
def factory(request: pytest.FixtureRequest) -> StoreFactory:
    return FACTORIES[str(request.param)]


def test_erasure_removes_every_point_of_the_user_and_nothing_else(factory: StoreFactory, tmp_path: Path) -> None:
    sink = _sink(factory(tmp_path / "store"))
    store = sink.store
    try:
        _feed(sink, _base_log())
        store.ensure_collection(FOREIGN, 8)
        store.upsert(FOREIGN, [VectorPoint(stable_id("foreign"), [1.0] * 8, {"user_id": GONE, "text": "not ours"})])
        before = _scan(store, STAYS)
        gone_before = _scan(store, GONE)
        assert [c for c, ids in sorted(gone_before.items()) if ids] == [
            "engram_code_chunk",
            "engram_concept",
            "engram_event",
            "engram_gist",
        ]
        assert any(p.payload["dormant"] == 1 for p in gone_before["engram_event"].values())

        _feed(sink, [subject_erased(GONE, T_BATCH, 99)], first_offset=1000)
        _assert_gone(store)
        assert _scan(store, STAYS) == before
        assert store.count("engram_gist") == 0  # the collection stays, empty
        assert _scan(store, GONE)[CODE] == gone_before[CODE]  # code stays, with its author
        assert [p.payload["text"] for p in store.scroll_all(FOREIGN)] == ["not ours"]  # not the sink's to erase
        assert (sink.stats.erasures, sink.stats.batches) == (1, 2)
    finally:
        sink.close()


def test_an_erasure_inside_a_batch_keeps_batch_order(factory: StoreFactory, tmp_path: Path) -> None:
    """One batch equals the events applied one by one; GONE keeps exactly what came after."""
    base, batch = _base_log(), _batch()
    whole = _sink(factory(tmp_path / "whole"))
    one_by_one = _sink(factory(tmp_path / "one-by-one"), max_batch=1)
    try:
        for sink in (whole, one_by_one):
            _feed(sink, base)
            _feed(sink, batch, first_offset=1000)
        assert whole.stats.batches == 2
        assert whole.content_hash() == one_by_one.content_hash()
        kept = {p.id: p.payload for c, by_id in _scan(whole.store, GONE).items() if c != CODE for p in by_id.values()}
        after = [stable_id("after", GONE, 0), stable_id("after", GONE, 1), stable_id("turn", GONE, 5)]
        assert sorted(kept) == sorted(after)
        assert kept[stable_id("turn", GONE, 5)]["text"] == f"returned {GONE}"
        assert kept[stable_id("after", GONE, 0)]["dormant"] == 1
    finally:
        whole.close()
        one_by_one.close()


def test_replaying_an_erasure_changes_nothing(factory: StoreFactory, tmp_path: Path) -> None:
    base, batch = _base_log(), _batch()
    sink = _sink(factory(tmp_path / "store"), max_batch=17)
    try:
        _feed(sink, base)
        _feed(sink, batch, first_offset=1000)
        settled = sink.content_hash()
        _feed(sink, batch, first_offset=1000)  # the batch again (redelivered)
        assert sink.content_hash() == settled
        _feed(sink, base)  # the whole log again: GONE's old points return, then the erasure takes them
        _feed(sink, batch, first_offset=1000)
        assert sink.content_hash() == settled
    finally:
        sink.close()


class _Killed(Exception):
    """The worker dies here."""


class _DyingStore:
    """Passes ``allowed`` writes to ``inner``, then dies; ``writes`` names each write it passed."""

    def __init__(self, inner: VectorStore, allowed: int | None = None) -> None:
        self.inner = inner
        self.allowed = allowed
        self.writes: list[str] = []

    def _write(self, name: str) -> None:
        if self.allowed is not None:
            if self.allowed == 0:
                raise _Killed
            self.allowed -= 1
        self.writes.append(name)

    def open(self) -> None:
        self.inner.open()

    def ensure_collection(self, name: str, dim: int) -> None:
        self.inner.ensure_collection(name, dim)

    def collections(self) -> list[str]:
        return self.inner.collections()

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        self._write("upsert")
        self.inner.upsert(collection, points)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        self._write("delete")
        self.inner.delete(collection, ids)

    def delete_where(self, collection: str, where: PointFilter) -> None:
        self._write("delete_where")
        self.inner.delete_where(collection, where)

    def set_payload(self, collection: str, ids: Sequence[str], payload: Mapping[str, object]) -> list[str]:
        self._write("set_payload")
        return self.inner.set_payload(collection, ids, payload)

    def search(
        self, collection: str, vector: Sequence[float], limit: int, filter: PointFilter | None = None
    ) -> list[SearchHit]:
        return self.inner.search(collection, vector, limit, filter)

    def scroll_all(self, collection: str, page: int = 256) -> Iterator[StoredPoint]:
        return self.inner.scroll_all(collection, page)

    def count(self, collection: str, filter: PointFilter | None = None) -> int:
        return self.inner.count(collection, filter)

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()


def _clean_hash(factory: StoreFactory, folder: Path) -> tuple[str, list[str]]:
    """The content after base + batch, and the writes the batch makes, in order."""
    sink = _sink(factory(folder))
    try:
        _feed(sink, _base_log())
        recorder = _DyingStore(sink.store)
        _feed(QdrantSink(recorder), _batch(), first_offset=1000)
        return sink.content_hash(), recorder.writes
    finally:
        sink.close()


def test_a_crash_anywhere_in_a_batch_with_an_erasure_then_replay_ends_like_a_clean_run(
    factory: StoreFactory, tmp_path: Path
) -> None:
    clean, writes = _clean_hash(factory, tmp_path / "clean")
    erase_at = writes.index("delete_where")
    assert writes.count("delete_where") == 3  # concept, event, code_chunk
    # Every cut on the fast engine; around the erasure on qdrant-client's slow local mode.
    cuts = range(len(writes)) if factory is FACTORIES["edge"] else (erase_at, erase_at + 1, erase_at + 3)
    for cut in cuts:
        folder = tmp_path / f"cut-{cut}"
        sink = _sink(factory(folder))
        _feed(sink, _base_log())
        dying = QdrantSink(_DyingStore(sink.store, allowed=cut))
        for item in as_items(_batch(), first_offset=1000):
            dying.add(item)
        with pytest.raises(_Killed):
            dying.flush()
        sink.close()
        restarted = _sink(factory(folder))  # a new worker replays the batch from the last commit
        try:
            _feed(restarted, _batch(), first_offset=1000)
            assert restarted.content_hash() == clean, f"cut after {cut} writes {writes[:cut]}"
        finally:
            restarted.close()


_KILL_SCRIPT = textwrap.dedent(
    """
    import os, sys
    from pathlib import Path
    from engram.sinks.qdrant.edge import EdgeVectorStore
    from engram.sinks.qdrant.plan import plan_batch
    from engram.sinks.qdrant.sink import QdrantSink
    from tests.sinks import test_qdrant_erasure as t

    store = EdgeVectorStore(Path(sys.argv[1]))
    sink = QdrantSink(store)
    sink.setup()
    sink.apply(plan_batch(t._base_log()))
    store.delete_where = lambda collection, where, real=store.delete_where: (real(collection, where), os._exit(9))
    sink.apply(plan_batch(t._batch()))  # dies after the first filter delete: no flush, no close
    """
)


def test_edge_worker_killed_inside_an_erasure_then_replayed(tmp_path: Path) -> None:
    clean, _ = _clean_hash(FACTORIES["edge"], tmp_path / "clean")
    folder = tmp_path / "killed"
    run = subprocess.run(  # noqa: S603 - our own interpreter running our own script
        [sys.executable, "-c", _KILL_SCRIPT, str(folder)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 9, run.stderr
    restarted = _sink(EdgeVectorStore(folder))
    try:
        _feed(restarted, _batch(), first_offset=1000)
        assert restarted.content_hash() == clean
    finally:
        restarted.close()
