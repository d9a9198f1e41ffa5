"""A view with a store (qdrant-edge): dormant nodes leave RAM, the whole memory is searched in the
store, and a re-awakened node comes back as it was."""

from __future__ import annotations

import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from engram.processors.rebac import Viewer
from engram.processors.retrieval.archive import WholeMemory
from engram.processors.retrieval.hybrid import BALANCED, hybrid_search
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.events import memory_event, stable_id
from engram.schemas.records import LAYERS, NODE_DORMANT, SUBJECT_ERASED, SubjectErased
from engram.sinks.qdrant.hybrid_index import HybridIndex
from tests.retrieval.builders import USER, Events
from tests.sinks.test_qdrant_hybrid_index import DIM, TEXTS, USER_ONLY

IDS = [stable_id(USER, n) for n in range(len(TEXTS))]
ASLEEP = (IDS[1], IDS[4], IDS[6])
QUERIES = ("greyhound Luna", "ridge trail storm", "pottery bowl", "marathon in October", "dogs on the trail")


def _memory() -> Events:
    rng = np.random.default_rng(5)
    events = Events()
    for node_id, text in zip(IDS, TEXTS, strict=True):
        events.node(node_id, text, vector=rng.standard_normal(DIM).tolist(), properties={"speaker": "Ann"})
    for src, dst in zip(IDS, IDS[1:], strict=False):
        events.edge("NEXT", src, dst)
    for node_id in ASLEEP:
        events.dormant(node_id)
    return events


@pytest.fixture
def store(tmp_path: Path) -> Iterator[HybridIndex]:
    index = HybridIndex.for_view(tmp_path / "view", DIM)
    yield index
    index.close()


def _views(store: HybridIndex, events: Events) -> tuple[MemoryView, MemoryView]:
    """The view with everything in RAM, and the same memory in a view with ``store``."""
    whole, stored = MemoryView(), MemoryView(store=store)
    whole.apply(events.events)
    stored.apply(events.events)
    return whole, stored


def _search(view: MemoryView, query: str, vector: np.ndarray) -> list[str]:
    found = hybrid_search(WholeMemory(view), query, 10, Viewer(USER), LAYERS, query_vector=vector, config=BALANCED)
    return [c.node_id for c in found.candidates]


def test_dormant_nodes_leave_ram_and_read_back_as_they_were(store: HybridIndex) -> None:
    whole, stored = _views(store, _memory())
    assert stored.held_bytes(dormant=True) == (0, 0)
    assert whole.held_bytes(dormant=True)[0] == len(ASLEEP)
    assert sorted(stored.stubs()) == sorted(ASLEEP)
    assert len(store) == len(ASLEEP)  # the archive: the live nodes are in RAM only
    for node_id in IDS:
        assert stored.node(node_id) == whole.node(node_id)
        assert stored.is_dormant(node_id) == whole.is_dormant(node_id)
        for whole_walk in (False, True):
            expected = whole.neighbours(node_id, LAYERS, ("NEXT",), whole=whole_walk)
            assert stored.neighbours(node_id, LAYERS, ("NEXT",), whole=whole_walk) == expected
    np.testing.assert_allclose(stored.node_vectors(list(ASLEEP)), whole.node_vectors(list(ASLEEP)), atol=1e-6)


def test_the_whole_memory_is_searched_in_the_store_as_in_ram(store: HybridIndex) -> None:
    whole, stored = _views(store, _memory())
    rng = np.random.default_rng(9)
    viewer = Viewer(USER)
    for query in QUERIES:
        vector = rng.standard_normal(DIM).astype(np.float32)
        dense = [(c.node_id, round(c.score, 5)) for c in stored.vector_search(vector, 4, viewer, LAYERS, scope="all")]
        in_ram = whole.vector_search(vector, 4, viewer, LAYERS, scope="all")
        assert dense == [(c.node_id, round(c.score, 5)) for c in in_ram]
        bm25 = [(c.node_id, round(c.score, 4)) for c in stored.text_search(query, 5, viewer, LAYERS, scope="all")]
        assert bm25 == [
            (c.node_id, round(c.score, 4)) for c in whole.text_search(query, 5, viewer, LAYERS, scope="all")
        ]
        assert _search(stored, query, vector)[:3] == _search(whole, query, vector)[:3], query
    vector = rng.standard_normal(DIM).astype(np.float32)
    assert {c.node_id for c in stored.vector_search(vector, 10, viewer, USER_ONLY, scope="archived")} == set(ASLEEP)
    assert stored.text_search("pottery", 10, Viewer("someone-else"), USER_ONLY, scope="all") == []


def test_a_reawakened_node_comes_back_to_ram_with_its_own_vector(store: HybridIndex) -> None:
    events = _memory().dormant(IDS[4], asleep=False)
    whole, stored = _views(store, events)
    assert IDS[4] not in stored.stubs()
    assert stored.is_searchable(IDS[4])
    assert stored.held_bytes(dormant=False) == whole.held_bytes(dormant=False)
    rng = np.random.default_rng(2)
    for _ in range(5):
        vector = rng.standard_normal(DIM).astype(np.float32)
        live = [(c.node_id, round(c.score, 5)) for c in stored.vector_search(vector, 8, Viewer(USER), USER_ONLY)]
        assert live == [(c.node_id, round(c.score, 5)) for c in whole.vector_search(vector, 8, Viewer(USER), USER_ONLY)]


def test_a_node_that_sleeps_wakes_and_sleeps_again_in_later_applies(store: HybridIndex) -> None:
    events = _memory()
    stored = MemoryView(store=store)
    stored.apply(events.events)
    more = Events(offset=events.offset)
    stored.apply(more.dormant(IDS[1], asleep=False).events)
    assert stored.is_searchable(IDS[1])
    stored.apply(Events(offset=more.offset).dormant(IDS[1]).events)
    assert IDS[1] in stored.stubs()
    back = stored.node(IDS[1])
    assert back is not None
    assert back.text == TEXTS[1]


def test_an_erasure_takes_the_nodes_that_left_ram_and_their_points(store: HybridIndex) -> None:
    events = _memory()
    erased: SubjectErased = {"user_id": USER, "reason": "asked", "requested_by": None}
    events.events.append(memory_event(USER, 99, [], SUBJECT_ERASED, erased))
    stored = MemoryView(store=store)
    stored.apply(events.events)
    assert stored.stubs() == {}
    assert all(stored.node(n) is None for n in IDS)
    assert len(store) == 0


def test_a_snapshot_holds_no_store_and_a_restart_reads_the_store_on_disk(tmp_path: Path) -> None:
    index = HybridIndex.for_view(tmp_path / "view", DIM)
    stored = MemoryView(store=index)
    stored.apply(_memory().events)
    state = pickle.dumps(stored)
    index.close()
    restored = pickle.loads(state)  # noqa: S301 - our own snapshot
    assert restored.store is None
    reopened = HybridIndex.for_view(tmp_path / "view", DIM)
    try:
        restored.attach(None, None, reopened)
        back = restored.node(ASLEEP[0])
        assert back is not None
        assert back.text == TEXTS[1]
    finally:
        reopened.close()


def test_a_search_asks_the_store_only_when_the_requester_may_see_a_node_that_left_ram(tmp_path: Path) -> None:
    class Counting(HybridIndex):
        searches = 0

        def vector_list(self, *args: Any, **kwargs: Any) -> list[Candidate]:
            Counting.searches += 1
            return super().vector_list(*args, **kwargs)

    store = Counting(tmp_path / "view", DIM, idf_in_store=False)
    try:
        stored = MemoryView(store=store)
        stored.apply(_memory().events)
        vector = np.ones(DIM, dtype=np.float32)
        assert stored.vector_search(vector, 3, Viewer("someone-else"), LAYERS, scope="all") == []
        assert Counting.searches == 0
        assert stored.vector_search(vector, 3, Viewer(USER), LAYERS, scope="all")
        assert Counting.searches == 1
    finally:
        store.close()


# --- the hot set: live turns past a user's cap leave RAM too (ViewConfig.hot_turns) -----------------

HOT = 3


def _awake_memory() -> Events:
    events = _memory()
    events.events = [e for e in events.events if e["change"][0] != NODE_DORMANT]
    return events


def _capped(store: HybridIndex, events: Events, hot: int = HOT) -> MemoryView:
    view = MemoryView(ViewConfig(hot_turns=hot), store=store)
    view.apply(events.events)
    return view


def test_live_turns_past_the_hot_set_leave_ram_and_are_searched_as_if_held(store: HybridIndex) -> None:
    events = _awake_memory()
    whole, capped = MemoryView(), _capped(store, events)
    whole.apply(events.events)
    assert sorted(capped.stubs()) == sorted(IDS[: len(IDS) - HOT])  # the oldest left; the newest stay
    assert capped.held_bytes(dormant=False)[0] == HOT
    assert len(capped) == len(whole)
    viewer, rng = Viewer(USER), np.random.default_rng(4)
    for query in QUERIES:
        vector = rng.standard_normal(DIM).astype(np.float32)
        for scope in ("live", "all"):
            dense = capped.vector_search(vector, 5, viewer, LAYERS, scope=scope)
            in_ram = whole.vector_search(vector, 5, viewer, LAYERS, scope=scope)
            assert [(c.node_id, round(c.score, 5)) for c in dense] == [(c.node_id, round(c.score, 5)) for c in in_ram]
            bm25 = capped.text_search(query, 5, viewer, LAYERS, scope=scope)
            expected = whole.text_search(query, 5, viewer, LAYERS, scope=scope)
            assert [(c.node_id, round(c.score, 4)) for c in bm25] == [(c.node_id, round(c.score, 4)) for c in expected]
        assert capped.vector_search(vector, 5, viewer, LAYERS, scope="archived") == []
        assert _search(capped, query, vector) == _search(whole, query, vector), query
        np.testing.assert_allclose(capped.term_scores(query, IDS), whole.term_scores(query, IDS), atol=1e-9)
    for node_id in IDS:
        assert capped.node(node_id) == whole.node(node_id)
        assert capped.is_searchable(node_id)
        assert capped.neighbours(node_id, LAYERS, ("NEXT",)) == whole.neighbours(node_id, LAYERS, ("NEXT",))
    assert capped.text_search("pottery", 10, Viewer("someone-else"), LAYERS) == []


def test_a_cold_turn_goes_dormant_comes_back_when_written_and_is_never_found_twice(store: HybridIndex) -> None:
    events = _awake_memory()
    capped = _capped(store, events)
    cold, rewritten = IDS[0], IDS[1]
    more = Events(offset=events.offset).dormant(cold)
    more.node(rewritten, TEXTS[1] + " again", vector=np.ones(DIM).tolist(), properties={"speaker": "Ann"})
    capped.apply(more.events)
    viewer, vector = Viewer(USER), np.ones(DIM, dtype=np.float32)
    assert capped.is_dormant(cold)
    assert not capped.is_searchable(cold)
    assert cold not in {c.node_id for c in capped.vector_search(vector, 20, viewer, LAYERS)}
    assert cold in {c.node_id for c in capped.vector_search(vector, 20, viewer, LAYERS, scope="archived")}
    assert rewritten not in capped.stubs()  # written again: the newest of the hot set
    found = [c.node_id for c in capped.vector_search(vector, 20, viewer, LAYERS, scope="all")]
    assert sorted(found) == sorted(IDS) and found[0] == rewritten
    assert capped.held_bytes(dormant=False)[0] == HOT


def test_a_used_turn_stays_hot_and_a_lower_cap_on_restart_sends_the_rest_to_the_store(store: HybridIndex) -> None:
    events = Events()
    rng = np.random.default_rng(1)
    for node_id, text in zip(IDS, TEXTS, strict=True):
        events.node(node_id, text, vector=rng.standard_normal(DIM).tolist())
        if node_id == IDS[1]:
            events.accessed(IDS[0], at_ms=events.offset)
    capped = _capped(store, events, hot=len(IDS) - 1)
    assert list(capped.stubs()) == [IDS[1]]  # IDS[0] was used after IDS[1] was written
    restored = pickle.loads(pickle.dumps(capped))  # noqa: S301 - our own snapshot
    restored.attach(None, None, store)
    restored.cap_hot(2)
    restored.apply([])
    assert sorted(restored.stubs()) == sorted(IDS[:-2])
    assert [restored.node(n) for n in IDS] == [capped.node(n) for n in IDS]


def test_a_question_naming_a_date_finds_the_cold_turns_of_that_time_too(store: HybridIndex) -> None:
    events = _awake_memory()
    whole, capped = MemoryView(), _capped(store, events)
    whole.apply(events.events)
    window = (0, 5)  # the first few offsets: their event times, in epoch ms
    viewer, rng = Viewer(USER), np.random.default_rng(6)
    for query in QUERIES:
        vector = rng.standard_normal(DIM).astype(np.float32)
        got = capped.dated_lists(query, vector, window, 3, viewer, LAYERS)
        expected = whole.dated_lists(query, vector, window, 3, viewer, LAYERS)
        for name in ("vector", "bm25"):
            assert [(c.node_id, round(c.score, 4)) for c in got[name]] == [
                (c.node_id, round(c.score, 4)) for c in expected[name]
            ], (query, name)
        early = {r.node_id for r in whole.records() if r.event_time_ms < window[1]}
        assert {c.node_id for c in got["vector"]} <= early and early & set(capped.stubs())
