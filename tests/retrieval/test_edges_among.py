"""`MemoryView.edges_among` (the compiler's ordering edges in one call) against the walk it replaces:
a `neighbours` call per node through `AuthorizedGraph`, over random layers, owners, dormancy; and
the view's one-pass `visible_neighbours` against filtering its `neighbours` afterwards."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.compiler.authorized import AuthorizedGraph
from engram.processors.rebac import Viewer
from engram.processors.retrieval.types import MemoryGraph
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import Layer
from tests.retrieval.builders import USER, Events

LAYER_CHOICES: tuple[Layer, ...] = ("USER", "TEAM", "ORGANIZATION")
OWNERS = (USER, "u-bob", None)
NODES = [f"n{i}" for i in range(6)]

node_specs = st.lists(
    st.tuples(st.sampled_from(LAYER_CHOICES), st.sampled_from(OWNERS), st.booleans()), min_size=6, max_size=6
)
edge_specs = st.lists(
    st.tuples(
        st.sampled_from(("NEXT", "CAUSAL", "REF")),
        st.sampled_from(NODES),
        st.sampled_from(NODES),
        st.sampled_from(LAYER_CHOICES),
    ),
    max_size=14,
)


def _walked(graph: AuthorizedGraph, node_ids: list[str], kinds: tuple[str, ...]) -> list[tuple[str, str]]:
    pairs: set[tuple[str, str]] = set()
    for node_id in node_ids:
        for nb in graph.neighbours(node_id, graph.layers, kinds):
            if nb.node_id in node_ids:
                pairs.add((node_id, nb.node_id) if nb.outgoing else (nb.node_id, node_id))
    return sorted(pairs)


@settings(max_examples=80, deadline=None)
@given(
    nodes=node_specs,
    edges=edge_specs,
    layers=st.sets(st.sampled_from(LAYER_CHOICES), min_size=1),
    chosen=st.sets(st.sampled_from(NODES), min_size=1),
)
def test_edges_among_matches_the_per_node_walk(
    nodes: list[tuple[Layer, str | None, bool]],
    edges: list[tuple[str, str, str, Layer]],
    layers: set[Layer],
    chosen: set[str],
) -> None:
    events = Events()
    for node_id, (layer, owner, _) in zip(NODES, nodes, strict=True):
        events.node(node_id, f"text of {node_id}", layer=layer, user_id=owner if layer == "USER" else None)
    for edge_type, src, dst, layer in edges:
        events.edge(edge_type, src, dst, layer=layer)
    for node_id, (_, _, asleep) in zip(NODES, nodes, strict=True):
        if asleep:
            events.dormant(node_id)
    view = MemoryView()
    view.apply(events.events)
    kinds = ("NEXT", "CAUSAL")
    walk = AuthorizedGraph(view, Viewer(USER), frozenset(layers))
    ids = sorted(chosen)
    assert walk.edges_among(ids, kinds) == _walked(walk, ids, kinds)

    class PlainGraph:  # no edges_among: AuthorizedGraph falls back to the per-node walk
        def __init__(self, inner: MemoryView) -> None:
            self.node = inner.node
            self.neighbours = inner.neighbours
            self.vector_search = inner.vector_search
            self.text_search = inner.text_search

    plain: MemoryGraph = PlainGraph(view)
    two_pass = AuthorizedGraph(plain, Viewer(USER), frozenset(layers))
    assert two_pass.edges_among(ids, kinds) == _walked(walk, ids, kinds)
    for node_id in NODES:  # the view's one-pass filter gives what filtering its neighbours afterwards gives
        for asked in (walk.layers, frozenset(LAYER_CHOICES[:2])):
            assert walk.neighbours(node_id, asked, kinds) == two_pass.neighbours(node_id, asked, kinds)
            assert walk.neighbours(node_id, asked) == two_pass.neighbours(node_id, asked)
