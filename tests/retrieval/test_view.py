"""MemoryView: events in, nodes, edges and searches out."""

from __future__ import annotations

import numpy as np
import pytest

from engram.processors.embedding import default_embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.errors import IndexUnavailableError
from engram.processors.retrieval.rows import RowBlock
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.processors.slb import NeighbourhoodLayout
from engram.schemas.records import LAYERS
from tests.retrieval.builders import USER, Events

ALL = LAYERS


def _view(events: Events, config: ViewConfig | None = None) -> MemoryView:
    view = MemoryView(config)
    view.apply(events.events)
    return view


def test_upsert_keeps_the_record_and_its_provenance() -> None:
    events = Events().node("a", "we adopted a cat named Miso", properties={"speaker": "Ann"})
    view = _view(events)
    record = view.node("a")
    assert record is not None
    assert record.text == "we adopted a cat named Miso"
    assert record.provenance == ({"topic": "engram.turns", "partition": 0, "offset": 1},)
    assert record.properties == {"speaker": "Ann"}
    assert len(view) == 1


def test_replacing_a_node_searches_only_the_new_text() -> None:
    view = _view(Events().node("a", "the garden needs water").node("a", "the car needs fuel"))
    assert [c.node_id for c in view.text_search("fuel", 5, Viewer(USER), ALL)] == ["a"]
    assert view.text_search("garden", 5, Viewer(USER), ALL) == []


def test_removed_node_is_gone_with_its_edges() -> None:
    events = Events().node("a", "alpha turn").node("b", "beta turn").edge("NEXT", "a", "b").remove("b")
    view = _view(events)
    assert view.node("b") is None
    assert view.neighbours("a", ALL) == []
    assert view.text_search("beta", 5, Viewer(USER), ALL) == []


def test_edges_both_directions_and_removal() -> None:
    events = Events().node("a", "one").node("b", "two").node("c", "three")
    events.edge("NEXT", "a", "b").edge("REF", "c", "a")
    view = _view(events)
    got = [(n.node_id, n.edge_type, n.outgoing) for n in view.neighbours("a", ALL)]
    assert got == [("b", "NEXT", True), ("c", "REF", False)]
    assert [n.node_id for n in view.neighbours("a", ALL, edge_types={"REF"})] == ["c"]
    view.apply(Events(offset=10).unedge("NEXT", "a", "b").events)
    assert [n.node_id for n in view.neighbours("a", ALL)] == ["c"]


def test_neighbours_respect_layers() -> None:
    events = Events().node("a", "one").node("t", "team note", layer="TEAM", user_id=None)
    events.edge("REF", "a", "t", layer="TEAM").node("b", "two").edge("NEXT", "a", "b")
    view = _view(events)
    assert [n.node_id for n in view.neighbours("a", ["USER"])] == ["b"]
    assert [n.node_id for n in view.neighbours("a", ["USER", "TEAM"])] == ["t", "b"]


def test_dormant_nodes_are_not_searchable_until_reawakened() -> None:
    view = _view(Events().node("a", "quiet lake cabin").dormant("a"))
    assert view.text_search("lake", 5, Viewer(USER), ALL) == []
    assert view.node("a") is not None
    view.apply(Events(offset=5).dormant("a", asleep=False).events)
    assert [c.node_id for c in view.text_search("lake", 5, Viewer(USER), ALL)] == ["a"]


def test_held_bytes_count_each_nodes_text_and_vector_on_its_side() -> None:
    view = MemoryView(embedder=default_embedder())
    view.apply(Events().node("a", "quiet lake cabin").node("b", "café").dormant("a").events)
    vector_bytes = default_embedder().dim * 4  # float32 rows
    assert view.held_bytes(dormant=True) == (1, vector_bytes + len(b"quiet lake cabin"))
    assert view.held_bytes(dormant=False) == (1, vector_bytes + len("café".encode()))


def test_facts_are_nodes_while_active() -> None:
    events = (
        Events().fact("f1", "Ann", "likes", "green tea").fact("f2", "Ann", "likes", "black coffee", supersedes="f1")
    )
    view = _view(events)
    assert view.node("f1") is None
    fact = view.node("f2")
    assert fact is not None and fact.kind == "fact" and fact.text == "Ann likes black coffee"
    view.apply(Events(offset=9).fact("f2", "Ann", "likes", "black coffee", decision="retract").events)
    assert view.node("f2") is None
    assert view.text_search("coffee", 5, Viewer(USER), ALL) == []


def test_vector_search_ranks_by_cosine_and_normalizes_rows() -> None:
    events = Events().node("x", "x", vector=[3.0, 0.0, 0.0]).node("y", "y", vector=[1.0, 1.0, 0.0])
    events.node("z", "z", vector=[0.0, 0.0, 2.0])
    view = _view(events)
    got = view.vector_search(np.array([1.0, 0.0, 0.0], dtype=np.float32), 2, Viewer(USER), ALL)
    assert [c.node_id for c in got] == ["x", "y"]
    assert got[0].score == pytest.approx(1.0)
    assert got[1].score == pytest.approx(2**-0.5)


def test_kind_filter_narrows_searches() -> None:
    view = _view(Events().node("e", "paris trip", kind="event").node("c", "paris trip", kind="concept"))
    assert [c.node_id for c in view.text_search("paris", 5, Viewer(USER), ALL, kinds={"event"})] == ["e"]


def test_speaker_property_is_indexed_for_bm25() -> None:
    view = _view(Events().node("a", "I painted a lake", properties={"speaker": "Melanie"}).node("b", "nice lake"))
    assert [c.node_id for c in view.text_search("Melanie lake", 5, Viewer(USER), ALL)][0] == "a"


def test_disabled_indexes_raise_index_unavailable() -> None:
    view = _view(Events().node("a", "text"), ViewConfig(text_index=False, vector_index=False))
    with pytest.raises(IndexUnavailableError) as text_error:
        view.text_search("text", 5, Viewer(USER), ALL)
    assert text_error.value.index == "bm25"
    with pytest.raises(IndexUnavailableError):
        view.vector_search(np.ones(3, dtype=np.float32), 5, Viewer(USER), ALL)


def test_wrong_query_dimension_is_index_unavailable() -> None:
    view = _view(Events().node("a", "text", vector=[1.0, 0.0]))
    with pytest.raises(IndexUnavailableError):
        view.vector_search(np.ones(3, dtype=np.float32), 5, Viewer(USER), ALL)


def test_contextual_vectors_carry_the_turn_being_answered() -> None:
    events = Events().node("q", "q", vector=[1.0, 0.0, 0.0]).node("r", "r", vector=[0.0, 1.0, 0.0])
    events.node("x", "x", vector=[0.6, 0.8, 0.0]).edge("NEXT", "q", "r")
    query = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    plain = _view(events, ViewConfig(context_vectors=(0.0, 0.0)))
    assert [c.node_id for c in plain.vector_search(query, 3, Viewer(USER), ALL)] == ["q", "x", "r"]
    contextual = _view(events, ViewConfig(context_vectors=(1.0, 0.0)))
    got = {c.node_id: c.score for c in contextual.vector_search(query, 3, Viewer(USER), ALL)}
    assert got["r"] == pytest.approx(2**-0.5)  # unit(v_r + v_q) . e1
    assert got["q"] == pytest.approx(1.0) and got["x"] == pytest.approx(0.6)
    contextual.apply(Events(offset=20).unedge("NEXT", "q", "r").events)
    got = {c.node_id: c.score for c in contextual.vector_search(query, 3, Viewer(USER), ALL)}
    assert got["r"] == pytest.approx(0.0, abs=1e-6)


def test_only_context_edges_relink_a_row_so_a_concepts_many_refs_walk_nothing(monkeypatch: pytest.MonkeyPatch) -> None:
    events = Events().node("q", "q", vector=[1.0, 0.0, 0.0]).node("r", "r", vector=[0.0, 1.0, 0.0])
    events.node("c", "hiking", vector=[0.0, 0.0, 1.0]).edge("NEXT", "q", "r")
    view = _view(events, ViewConfig(context_vectors=(1.0, 0.0)))
    relinked: list[str] = []
    real = view._relink

    def counted(node_id: str, *, neighbours: bool = False) -> None:
        relinked.append(node_id)
        real(node_id, neighbours=neighbours)

    monkeypatch.setattr(view, "_relink", counted)
    refs = Events(offset=10)
    for src in ("q", "r"):
        refs.edge("REF", src, "c")
    view.apply(refs.events)
    assert relinked == []  # a REF edge moves no contextual vector
    view.apply(Events(offset=20).unedge("NEXT", "q", "r").events)
    assert set(relinked) == {"q", "r"}
    got = {c.node_id: c.score for c in view.vector_search(np.array([1.0, 0.0, 0.0], np.float32), 3, Viewer(USER), ALL)}
    assert got["r"] == pytest.approx(0.0, abs=1e-6)


def test_vectors_arriving_out_of_order_across_matrix_chunks() -> None:
    view = MemoryView(ViewConfig(chunk_rows=2))
    events = Events()
    for i in range(40):  # past the first 16 rows, then two rows a step
        events.node(f"n{i}", f"turn {i}", vector=[1.0, float(i)] if i % 2 else None)
        if i:
            events.edge("NEXT", f"n{i - 1}", f"n{i}")
    view.apply(events.events)
    got = view.vector_search(np.array([0.0, 1.0], dtype=np.float32), 3, Viewer(USER), ALL)
    assert [c.node_id for c in got] == ["n39", "n37", "n35"]


def test_node_vectors_are_the_stored_unit_rows_and_zero_without_a_vector() -> None:
    events = (
        Events()
        .node("a", "alpha", vector=[3.0, 0.0, 4.0])
        .node("b", "beta", layer="TEAM", user_id=None, vector=[0.0, 2.0, 0.0])
        .node("c", "gamma")
    )
    rows = _view(events).node_vectors(["b", "missing", "a", "c"])
    assert rows.shape == (4, 3) and rows.dtype == np.float32
    assert np.allclose(rows, [[0.0, 1.0, 0.0], [0.0, 0.0, 0.0], [0.6, 0.0, 0.8], [0.0, 0.0, 0.0]])


def test_term_scores_equal_the_text_search_of_whoever_sees_those_blocks() -> None:
    """The SLB re-scores a cached neighbourhood with ``term_scores``: the same BM25 as the search."""
    events = Events().node("a", "the orders database moved to postgres", properties={"speaker": "Ann"})
    events.node("b", "postgres needs a bigger connection pool").node("c", "we baked bread on sunday")
    events.node("t", "team runbook: postgres failover", layer="TEAM", user_id=None).node("z", "zzz").dormant("z")
    events.node("o", "another user's postgres notes", user_id="someone-else")
    view = _view(events)
    query = "postgres database pool"
    searched = {c.node_id: c.score for c in view.text_search(query, 10, Viewer(USER), ("USER", "TEAM"))}
    ids = ["c", "t", "b", "missing", "a", "z"]
    got = dict(zip(ids, view.term_scores(query, ids).tolist(), strict=True))
    assert got == {n: searched.get(n, 0.0) for n in ids}  # bit-identical: same statistics, same formula
    assert got["a"] > 0 and got["b"] > 0 and got["t"] > 0 and got["c"] == got["missing"] == got["z"] == 0.0
    assert view.term_scores(query, ["a", "b"]).tolist() == view.term_scores(query, ["b", "a"]).tolist()[::-1]
    assert isinstance(view, NeighbourhoodLayout)  # so the compiler's SLB hits re-score with these weights
    layout = view.neighbourhood(ids)
    (best,) = view.text_search("bread sunday", 10, Viewer(USER), ("USER", "TEAM"))
    assert best.node_id == "c" and layout.scores("bread sunday").tolist() == [best.score] + [0.0] * 5


def test_a_block_keeps_room_for_its_rows_not_a_whole_chunk() -> None:
    block = RowBlock(chunk_rows=4096)
    block.append("n0", 0, ["a"])
    block.set_vector(0, np.ones(256, dtype=np.float32))
    assert block.vectors is not None
    assert block.vectors.shape[0] == 16  # a worker holds a block per user: 16 rows, not 4096
    for i in range(1, 5000):
        block.append(f"n{i}", 0, ["a"])
    capacity = block.vectors.shape[0]
    assert block.size <= capacity <= block.size + 4096
    assert capacity - block.size <= block.size // 4  # grown by a quarter, at most a chunk a step
    assert block.kind.shape[0] == capacity
