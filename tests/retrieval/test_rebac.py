"""ReBAC inside every search (hypothesis): an unauthorized node is never returned and never
changes the scores or the order of the authorized ones."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.rebac import Viewer, is_visible
from engram.processors.retrieval.hybrid import BALANCED, hybrid_search
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import LAYERS, Layer
from tests.retrieval.builders import Events
from tests.retrieval.test_hybrid import VOCAB, KeywordEmbedder

USER = "u1"
Spec = tuple[str, Layer, str]
node_spec = st.tuples(
    st.lists(st.sampled_from(VOCAB), min_size=1, max_size=4).map(" ".join),
    st.sampled_from(LAYERS),
    st.sampled_from(("u1", "u2")),
)


def _view(nodes: list[tuple[int, Spec]], keep: set[int]) -> MemoryView:
    """Nodes n<index> for the indexes in ``keep``; NEXT edges n<i> -> n<i+1> (USER layer) where
    both ends are kept, so the authorized subgraph is the same in every view."""
    events = Events()
    for index, (text, layer, owner) in nodes:
        if index in keep:
            events.node(f"n{index}", text, layer=layer, user_id=owner, properties={"speaker": owner})
    for index, _ in nodes:
        if index in keep and index + 1 in keep:
            events.edge("NEXT", f"n{index}", f"n{index + 1}")
    view = MemoryView(embedder=KeywordEmbedder())
    view.apply(events.events)
    return view


@settings(max_examples=100, deadline=None)
@given(
    nodes=st.lists(node_spec, min_size=1, max_size=25),
    layers=st.sets(st.sampled_from(LAYERS)),
    query=st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map(" ".join),
)
def test_unauthorized_nodes_neither_appear_nor_change_results(
    nodes: list[Spec], layers: set[Layer], query: str
) -> None:
    allowed = frozenset(layers)
    indexed = list(enumerate(nodes))
    visible = [(i, spec) for i, spec in indexed if is_visible(spec[1], spec[2], None, Viewer(USER), allowed)]
    everything = _view(indexed, {i for i, _ in indexed})
    authorized_only = _view(indexed, {i for i, _ in visible})
    visible_ids = {f"n{i}" for i, _ in visible}
    qv = KeywordEmbedder().embed([query])[0]
    a = hybrid_search(everything, query, 10, Viewer(USER), allowed, query_vector=qv, config=BALANCED)
    b = hybrid_search(authorized_only, query, 10, Viewer(USER), allowed, query_vector=qv, config=BALANCED)
    assert {c.node_id for c in a.candidates} <= visible_ids
    assert [(c.node_id, c.score) for c in a.candidates] == [(c.node_id, c.score) for c in b.candidates]
    assert everything.text_search(query, 10, Viewer(USER), allowed) == authorized_only.text_search(
        query, 10, Viewer(USER), allowed
    )
    assert everything.vector_search(qv, 10, Viewer(USER), allowed) == authorized_only.vector_search(
        qv, 10, Viewer(USER), allowed
    )
    for node_id in visible_ids:
        assert everything.neighbours(node_id, allowed, user_id=USER) == authorized_only.neighbours(
            node_id, allowed, user_id=USER
        )
