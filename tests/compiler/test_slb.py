"""The Semantic Lookaside Buffer: hit/miss, LRU, key isolation, invalidation, state round trip."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.rebac import Viewer
from engram.processors.slb import (
    SLB_SMALL,
    LookasideBuffer,
    LookasideTable,
    SlbConfig,
    TermMatrix,
    rescore,
    serves_now,
)
from engram.schemas.events import memory_event, node_dormant
from engram.schemas.records import NODE_DORMANT, MemoryEvent
from tests.compiler.haystack import distractors
from tests.compiler.memory import T0, USER, Fixture, counter, embedder, request


def _unit(*values: float, dim: int = 8) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[: len(values)] = values
    return v / np.linalg.norm(v)


def _axis(i: int, dim: int = 32) -> np.ndarray:
    v = np.zeros(dim, dtype=np.float32)
    v[i] = 1.0
    return v


def test_hit_above_tau_miss_below() -> None:
    buffer = LookasideBuffer(8, SlbConfig(tau_hit=0.85))
    assert not buffer.lookup(_unit(1.0), 0).hit  # empty
    buffer.insert(_unit(1.0), ["a", "b"], [0.9, 0.5], None, 0)
    near = buffer.lookup(_unit(1.0, 0.3), 0)  # cos ≈ 0.958
    assert near.hit and near.entry is not None and near.entry.node_ids == ("a", "b")
    far = buffer.lookup(_unit(1.0, 1.0), 0)  # cos ≈ 0.707
    assert not far.hit and far.similarity == pytest.approx(0.7071, abs=1e-3)


def test_lru_evicts_the_least_recently_used_by_logical_clock() -> None:
    buffer = LookasideBuffer(32, SLB_SMALL)  # 16 entries
    for i in range(16):
        buffer.insert(_axis(i), [f"n{i}"], [1.0], None, 0)
    assert buffer.lookup(_axis(0), 0).hit  # touch entry 0: entry 1 is now the oldest
    buffer.insert(_axis(16), ["n16"], [1.0], None, 0)
    assert len(buffer) == 16
    assert buffer.lookup(_axis(0), 0).hit
    assert not buffer.lookup(_axis(1), 0).hit
    assert buffer.lookup(_axis(16), 0).hit


def test_capacity_is_bounded_to_the_papers_range() -> None:
    with pytest.raises(ValueError, match="capacity"):
        SlbConfig(capacity=8)
    with pytest.raises(ValueError, match="capacity"):
        SlbConfig(capacity=65)


def test_key_isolates_sessions_and_authorization_sets() -> None:
    table = LookasideTable(SlbConfig())
    user_view = table.buffer(Viewer("u1"), "s1", ["USER"], 8)
    user_view.insert(_unit(1.0), ["private"], [1.0], None, 0)
    assert table.buffer(Viewer("u1"), "s1", ["USER"], 8) is user_view
    assert not table.buffer(Viewer("u1"), "s1", ["USER", "TEAM"], 8).lookup(_unit(1.0), 0).hit
    assert not table.buffer(Viewer("u1"), "s2", ["USER"], 8).lookup(_unit(1.0), 0).hit
    assert table.buffer(Viewer("u1"), "s1", ["USER"], 8).lookup(_unit(1.0), 0).hit


def test_invalidation_by_removed_nodes_and_by_memory_age() -> None:
    table = LookasideTable(SlbConfig(max_age_events=10))
    buffer = table.buffer(Viewer("u1"), "s1", ["USER"], 8)
    buffer.insert(_unit(1.0), ["a", "b"], [1.0, 0.5], None, table.epoch("u"))
    buffer.insert(_unit(0.0, 1.0), ["c"], [1.0], "concept-x", table.epoch("u"))
    assert table.remove_nodes(["b"]) == 1
    assert not buffer.lookup(_unit(1.0), table.epoch("u")).hit
    assert buffer.lookup(_unit(0.0, 1.0), table.epoch("u")).hit
    table.note_memory_events("u", 10)
    assert buffer.lookup(_unit(0.0, 1.0), table.epoch("u")).hit  # exactly max_age: still fresh
    table.note_memory_events("u", 1)
    assert not buffer.lookup(_unit(0.0, 1.0), table.epoch("u")).hit
    assert len(buffer) == 0


def test_state_round_trips_through_json_and_behaves_the_same() -> None:
    table = LookasideTable(SlbConfig())
    buffer = table.buffer(Viewer("u1"), "s1", ["USER", "TEAM"], 8)
    for i in range(5):
        buffer.insert(_unit(1.0, i * 0.7), [f"n{i}", "shared"], [1.0, 0.25], f"c{i}", i)
    buffer.lookup(_unit(1.0, 0.7), 5)
    table.note_memory_events("u", 5)
    state = json.loads(json.dumps(table.to_state()))
    restored = LookasideTable.from_state(state, SlbConfig())
    assert restored.to_state() == table.to_state()
    again = restored.buffer(Viewer("u1"), "s1", ["TEAM", "USER"], 8)
    for probe in (_unit(1.0, 2.8), _unit(0.0, 1.0), _unit(1.0)):
        a, b = buffer.lookup(probe, 5), again.lookup(probe, 5)
        assert a.hit == b.hit and a.similarity == pytest.approx(b.similarity)
        assert (a.entry.node_ids if a.entry else None) == (b.entry.node_ids if b.entry else None)


def test_state_packs_arrays_exactly_and_still_reads_plain_lists() -> None:
    buffer = LookasideBuffer(8, SlbConfig())
    buffer.insert(_unit(0.3, 0.1, 0.7), ["a", "b"], [0.123456789012345, 1.0 / 3.0], None, 0)
    state = json.loads(json.dumps(buffer.to_state()))
    entry = state["entries"][0]
    assert isinstance(entry["centroid"], str) and isinstance(entry["scores"], str)  # packed, not float lists
    restored = LookasideBuffer.from_state(state, SlbConfig()).entries[0]
    assert restored.scores == buffer.entries[0].scores  # bit-exact
    assert np.array_equal(restored.centroid, buffer.entries[0].centroid)
    # A state written before packing (plain lists) loads to the same entry.
    entry["centroid"] = [float(x) for x in buffer.entries[0].centroid]
    entry["scores"] = list(buffer.entries[0].scores)
    legacy = LookasideBuffer.from_state(state, SlbConfig()).entries[0]
    assert legacy.scores == restored.scores and np.array_equal(legacy.centroid, restored.centroid)
    entry["centroid"] = "not base64!"
    with pytest.raises(TypeError, match="packed"):
        LookasideBuffer.from_state(state, SlbConfig())


def _topic_memory() -> Fixture:
    fx = Fixture()
    fx.node("c-db", "databases", kind="concept", session_id=None)
    fx.node("c-ann", "vector ANN indexes", kind="concept", session_id=None)
    fx.edge("CHILD_OF", "c-ann", "c-db")
    texts = [
        "We moved the orders database from MySQL to Postgres in May.",
        "The Postgres database needed a bigger connection pool after the move.",
        "Database backups now run every night at two.",
        "I baked sourdough bread with my sister on Sunday.",
    ]
    for i, text in enumerate(texts):
        node = fx.node(f"t{i}", text, time_ms=T0 + i * 1000)
        if "atabase" in text:
            fx.edge("REF", node, "c-db")
    return fx


def test_compiler_hits_on_a_similar_follow_up_and_prefetches_atlas_children() -> None:
    view = _topic_memory().view()
    table = LookasideTable(SlbConfig(tau_hit=0.8))
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=table)
    first = compiler.compile(request("Which database did we move the orders to?", 200, session_id="chat"))
    assert not first["cache_hit"]
    second = compiler.compile(request("Which database did we move orders to in May?", 200, session_id="chat"))
    assert second["cache_hit"]
    assert "t0" in [i["node_id"] for i in second["items"]]
    entry = table.buffer(Viewer(USER), "chat", ["SYSTEM", "ORGANIZATION", "TEAM", "USER"], embedder().dim).entries[0]
    assert entry.anchor_id == "c-db" and "c-ann" in entry.node_ids  # the child concept was staged
    other = compiler.compile(request("Which database did we move the orders to?", 200, session_id="other"))
    assert not other["cache_hit"]  # another session never reads this one's cache


def test_on_trace_built_memory_a_hit_stages_the_other_turns_about_its_anchor_concept() -> None:
    """Turns anchor to level-0 concepts, which have no Atlas children: the prefetch stages the
    concept's other members, which the first search left outside the neighbourhood (issue 49)."""
    fx = Fixture()
    fx.node("c-db", "databases", kind="concept", session_id=None)
    texts = [
        "We moved the orders database from MySQL to Postgres in May.",
        "The Postgres database needed a bigger connection pool after the move.",
        "Nightly backups and a replica came last, after the cutover.",  # about the concept, other words
    ]
    for i, text in enumerate(texts):
        fx.edge("REF", fx.node(f"t{i}", text, time_ms=T0 + i * 1000), "c-db")
    for i, text in enumerate(distractors(30)):
        fx.node(f"d{i}", text, time_ms=T0 + 10_000 + i)
    table = LookasideTable(SlbConfig(tau_hit=0.8, neighbourhood_size=2))
    compiler = ContextCompiler(fx.view(), embedder(), counter(), BALANCED, slb=table)
    compiler.compile(request("Which database did we move the orders to?", 200, session_id="chat"))
    entry = table.buffer(Viewer(USER), "chat", ["SYSTEM", "ORGANIZATION", "TEAM", "USER"], embedder().dim).entries[0]
    assert entry.anchor_id == "c-db" and "t2" not in entry.node_ids
    second = compiler.compile(request("Which database did we move orders to in May?", 200, session_id="chat"))
    assert second["cache_hit"] and "t2" in entry.node_ids


def test_term_matrix_matches_the_retrieval_bm25_and_hits_rescore_for_the_new_query() -> None:
    fx = Fixture()
    texts = distractors(60)
    ids = [fx.node(f"d{i:03d}", text, time_ms=T0 + i) for i, text in enumerate(texts)]
    view = fx.view()
    terms = TermMatrix(ids, texts)
    query = "Who went hiking near the lake last week?"
    reference = view.text_search(query, 60, Viewer(USER), ["USER"])
    mine = terms.term_scores(query, [c.node_id for c in reference])
    np.testing.assert_allclose(mine, [c.score for c in reference], atol=1e-9)
    # A hit re-ranks the cached neighbourhood for the new query, not in the cached order.
    buffer = LookasideBuffer(embedder().dim, SlbConfig())
    entry = buffer.insert(embedder().embed(["pottery class"])[0], ids, [1.0] * len(ids), None, 0)
    follow_up = "Who adopted a grey cat from the shelter?"
    ranked = rescore(entry, embedder().embed([follow_up])[0], view, terms, follow_up)
    assert "adopted a small grey cat" in texts[ids.index(ranked[0].node_id)]
    assert ranked[0].score == 1.0 and all(0.0 <= c.score <= 1.0 for c in ranked)
    for k in (1, 5, 10, 59):
        assert rescore(entry, embedder().embed([follow_up])[0], view, terms, follow_up, limit=k) == ranked[:k]


def test_two_users_on_one_session_name_each_get_their_own_memory_not_a_denial() -> None:
    """Regression (issue 17): the SLB was keyed by session and layers only, so the second user on
    session "cli" hit the first user's cached neighbourhood and the compile raised
    UnauthorizedItemError (the request was dead-lettered)."""
    fx = _topic_memory()
    bob = "u-bob"
    fx.node("b0", "Bob moved the orders database to Postgres in May", user_id=bob, time_ms=T0 + 10_000)
    fx.node("b1", "Bob's database migration finished on Friday", user_id=bob, time_ms=T0 + 11_000)
    view = fx.view()
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=LookasideTable(SlbConfig(tau_hit=0.8)))
    question = "Which database did we move the orders to?"
    alice = compiler.compile(request(question, 200, session_id="cli", layers=["USER"]))
    bobs = compiler.compile(request(question, 200, session_id="cli", layers=["USER"], user_id=bob))
    assert not bobs["cache_hit"]  # Bob's first question on "cli" is his own cache's miss
    assert {i["node_id"] for i in bobs["items"]} <= {"b0", "b1"} and bobs["items"]
    assert not {i["node_id"] for i in alice["items"]} & {"b0", "b1"}
    again = compiler.compile(request(question, 200, session_id="cli", layers=["USER"], user_id=bob))
    assert again["cache_hit"] and {i["node_id"] for i in again["items"]} <= {"b0", "b1"}


def _dormant(node_id: str) -> MemoryEvent:
    return memory_event(USER, T0 + 99_000, [], NODE_DORMANT, node_dormant(node_id, "dreamt away"))


def test_a_hit_whose_node_went_dormant_since_is_not_served_but_searched_again() -> None:
    """Issue 49: a cached neighbourhood kept serving a node a dream had archived since, bypassing
    the archive's rule (a dormant node answers only among the whole memory's best few)."""
    view = _topic_memory().view()
    table = LookasideTable(SlbConfig(tau_hit=0.8))
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=table)
    question = "Which database did we move the orders to?"
    assert not compiler.compile(request(question, 200, session_id="chat"))["cache_hit"]
    assert compiler.compile(request(question, 200, session_id="chat"))["cache_hit"]
    buffer = table.buffer(Viewer(USER), "chat", ["SYSTEM", "ORGANIZATION", "TEAM", "USER"], embedder().dim)
    (filled,) = buffer.entries
    assert "t1" in filled.node_ids
    view.apply([_dormant("t1")])
    again = compiler.compile(request(question, 200, session_id="chat"))
    assert not again["cache_hit"]  # the entry was dropped and the request searched the memory
    (refilled,) = buffer.entries
    assert refilled.entry_id != filled.entry_id


def test_serves_now_needs_every_cached_node_visible_and_awake() -> None:
    entry = LookasideBuffer(8, SlbConfig()).insert(_unit(1.0), ["a", "b"], [1.0, 0.5], "c", 0)

    class Walk:
        def __init__(self, hidden: set[str]) -> None:
            self.hidden = hidden

        def visible(self, node_id: str) -> bool:
            return node_id not in self.hidden

    class Archive:
        def is_dormant(self, node_id: str) -> bool:
            return node_id == "b"

    assert serves_now(entry, Walk(set()), None)
    assert not serves_now(entry, Walk(set()), Archive())
    assert not serves_now(entry, Walk({"a"}), None)
    assert not serves_now(entry, Walk({"c"}), None)  # the anchor counts too
