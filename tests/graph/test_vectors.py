"""A graph engine that reads a worker view's vectors answers as an engine that keeps a copy."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from engram.processors.graph.columns import Matrix
from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.types import Principal
from engram.processors.graph.vectors import unit_rows
from engram.processors.retrieval.view import MemoryView
from tests.retrieval.builders import USER, Events

WORDS = ("deploy", "friday", "cache", "hiking", "paris", "budget", "river", "garden")
FLOATS = st.floats(-4.0, 4.0, allow_nan=False, width=32)


@settings(max_examples=100, deadline=None)
@given(hnp.arrays(np.float32, st.tuples(st.integers(1, 12), st.integers(1, 40)), elements=FLOATS))
def test_unit_rows_are_the_rows_a_matrix_keeps_bit_for_bit(rows: np.ndarray) -> None:
    matrix = Matrix()
    for row, vector in enumerate(rows):
        matrix.set(row, vector)
    kept, has = matrix.take(np.arange(len(rows)), len(rows))
    unit, unit_has = unit_rows(rows)
    assert np.array_equal(has, unit_has)
    assert np.array_equal(kept[has].view(np.uint32), unit[has].view(np.uint32))
    assert not unit[~has].any()


def _memory(seed: int) -> Events:
    rng = np.random.default_rng(seed)
    log = Events()
    for i in range(30):
        words = " ".join(rng.choice(WORDS, size=4))
        vector = None if i % 7 == 3 else [float(x) for x in rng.standard_normal(16)]
        log.node(f"n{i}", f"{words} {i}", vector=vector)
        if i:
            log.edge("NEXT", f"n{i - 1}", f"n{i}")
    log.remove("n5").dormant("n9")
    return log


@settings(max_examples=20, deadline=None)
@given(st.integers(0, 10_000))
def test_an_engine_reading_the_view_answers_as_one_holding_a_copy(seed: int) -> None:
    events = _memory(seed).events
    view = MemoryView()
    view.apply(events)
    borrowing, copying = GraphEngine(vectors=view.node_vectors), GraphEngine()
    borrowing.apply(events)
    copying.apply(events)
    for row, node_id in enumerate(copying.store.ids):  # what the engine copied from the view before
        vector = view.node_vectors([node_id])[0]
        if vector.any():
            copying.store.vectors.set(row, vector)
    assert isinstance(copying.store.vectors, Matrix) and not isinstance(borrowing.store.vectors, Matrix)
    query = [float(x) for x in np.random.default_rng(seed + 1).standard_normal(16)]
    principal = Principal.of(USER)
    for asked in (
        GraphQuery("similarity", {"vector": query, "limit": 8}),
        GraphQuery("hybrid", {"text": "deploy friday cache", "vector": query}),
        GraphQuery("analogy", {"node": "n12"}),
        GraphQuery("analogy", {"node": "n3"}),
    ):
        assert borrowing.run(principal, asked) == copying.run(principal, asked)
