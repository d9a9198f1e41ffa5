"""A view block rebuilt without its tombstones answers exactly as the block that kept them."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.rebac import Viewer
from engram.processors.retrieval.errors import IndexUnavailableError
from engram.processors.retrieval.rows import Scope
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.records import LAYERS
from tests.retrieval.builders import USER, Events

ALL = frozenset(LAYERS)
SCOPES: tuple[Scope, ...] = ("live", "archived", "all")
WORDS = ("hiking", "paris", "dog", "piano", "coffee", "boston", "novel", "garden")
NODES = tuple(f"n{i}" for i in range(12))
OPS = st.tuples(st.sampled_from(("upsert", "upsert", "upsert", "remove", "sleep", "wake", "link", "link", "unlink")),
                st.sampled_from(NODES), st.sampled_from(NODES),
                st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.integers(0, 7))  # fmt: skip


def _events(ops: list[tuple[str, str, str, list[str], int]]) -> Events:
    events = Events()
    for op, node, other, words, angle in ops:
        if op == "upsert":
            vector = None if angle == 0 else [float(np.cos(angle)), float(np.sin(angle)), 0.5]
            events.node(node, " ".join(words), vector=vector)
        elif op == "remove":
            events.remove(node)
        elif op in ("sleep", "wake"):
            events.dormant(node, asleep=op == "sleep")
        elif op == "unlink":
            events.unedge("NEXT", node, other)
        else:
            events.edge("NEXT", node, other)
    return events


def _hits(search: Callable[..., list[Candidate]], *args: object, **kwargs: object) -> object:
    try:
        return [(c.node_id, c.score) for c in search(*args, **kwargs)]
    except IndexUnavailableError as error:
        return str(error)


def _answers(view: MemoryView) -> list[object]:
    viewer, out = Viewer(USER), []
    for scope in SCOPES:
        for query in ("hiking dog", "paris coffee piano", "garden"):
            out.append(_hits(view.text_search, query, 5, viewer, ALL, scope=scope))
        for vector in ([1.0, 0.0, 0.0], [0.2, 0.9, 0.1]):
            out.append(_hits(view.vector_search, np.array(vector, dtype=np.float32), 5, viewer, ALL, scope=scope))
    out.append(view.term_scores("hiking paris novel", list(NODES)).tolist())
    out.append(view.node_vectors(list(NODES)).tolist())
    out.append([(n.node_id, n.edge_type) for node in NODES for n in view.neighbours(node, ALL, whole=True)])
    return out


def _walked_links(view: MemoryView, node_id: str) -> tuple[int, int]:
    """(previous, next) row of a node by walking all of its edges, first arrived each way."""
    slot, linked = view._slots[node_id], {True: -1, False: -1}
    for table, outgoing in ((view._edges.out, True), (view._edges.into, False)):
        for edge in table.get(node_id, {}).values():
            other = view._slots.get(edge.dst if outgoing else edge.src)
            if edge.edge_type == "NEXT" and other is not None and other.block == slot.block and linked[outgoing] < 0:
                linked[outgoing] = other.row
    return linked[False], linked[True]


@settings(max_examples=150, deadline=None)
@given(st.lists(OPS, min_size=1, max_size=60), st.integers(1, 8))
def test_compacted_blocks_answer_as_blocks_that_keep_their_tombstones(
    ops: list[tuple[str, str, str, list[str], int]], batch: int
) -> None:
    events = _events(ops).events
    kept, compacted = MemoryView(ViewConfig(compact_rows=10**9)), MemoryView(ViewConfig(compact_rows=1))
    for start in range(0, len(events), batch):
        kept.apply(events[start : start + batch])
        compacted.apply(events[start : start + batch])
        assert _answers(compacted) == _answers(kept)
        for view in (kept, compacted):  # the context links are those a walk over every edge finds
            for node_id, slot in view._slots.items():
                block = view._blocks[slot.block]
                assert (block.prev_row[slot.row], block.next_row[slot.row]) == _walked_links(view, node_id)
    for block in compacted._blocks.values():
        assert block.tombstones() * 4 < block.size or block.tombstones() == 0  # under a quarter after each apply


def test_a_node_upserted_again_and_again_leaves_no_trail_of_rows() -> None:
    view, events = MemoryView(ViewConfig(compact_rows=64)), Events()
    for turn in range(1000):
        events.node("concept", f"hiking version {turn}", vector=[1.0, float(turn % 7), 0.0])
        events.node(f"turn{turn}", "a turn", vector=[0.0, 1.0, 0.0])
        view.apply(events.events)
        events.events.clear()
    (block,) = view._blocks.values()
    assert block.size < 1001 * 4 / 3 + 1  # 1,001 nodes; without compaction, 2,000 rows
    assert block.vectors is not None and block.vectors.shape[0] < 2000
    row = view._slots["concept"].row
    assert block.node_ids[row] == "concept" and block.searchable[row]
    got = view.text_search("hiking", 3, Viewer(USER), ALL)
    assert [c.node_id for c in got] == ["concept"]
    concept = view.node("concept")
    assert concept is not None and concept.text == "hiking version 999"


def test_a_node_removed_with_its_links_and_added_again_is_linked_again() -> None:
    view, events = MemoryView(), Events()
    for node_id in ("a", "b", "c"):
        events.node(node_id, f"turn {node_id}", vector=[1.0, 0.5, 0.0])
    events.edge("NEXT", "a", "b").edge("NEXT", "c", "c").remove("a").remove("c")
    events.node("a", "turn a again", vector=[1.0, 0.0, 0.0]).node("c", "turn c again", vector=[0.0, 1.0, 0.0])
    view.apply(events.edge("NEXT", "a", "c").edge("NEXT", "c", "b").events)
    for node_id in ("a", "b", "c"):
        slot = view._slots[node_id]
        block = view._blocks[slot.block]
        assert (block.prev_row[slot.row], block.next_row[slot.row]) == _walked_links(view, node_id) != (-1, -1)
