"""Small random typed graphs for the graph engine's property tests, and the store that holds them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st

from engram.processors.graph.store import GraphStore, NodeSpec
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import EdgeType, NodeType, Principal

USER = "ada"
WORDS = ("api", "rate", "limit", "cache", "deploy", "payments", "redis", "query", "index", "latency")


@dataclass(frozen=True)
class RandomGraph:
    types: list[NodeType]
    confidences: list[float]
    times: list[int]
    texts: list[str]
    edges: list[tuple[int, int, EdgeType, float]]
    layers: list[str] | None = None  # per node; None: every node is USER's own
    owners: list[str] | None = None

    @property
    def n(self) -> int:
        return len(self.types)

    def store(self, keep: Callable[[int], bool] = lambda i: True) -> GraphStore:
        """The graph as a store; ``keep`` leaves out the other nodes and their edges entirely."""
        store = GraphStore()
        for i in filter(keep, range(self.n)):
            layer = self.layers[i] if self.layers else "USER"
            owner = self.owners[i] if self.owners else USER
            spec = NodeSpec(self.types[i], layer, owner, f"s{i % 3}", self.confidences[i], self.times[i], self.texts[i])
            store.add_node(f"n{i}", spec, vector(i))
        for k, (u, v, edge_type, weight) in enumerate(self.edges):
            if keep(u) and keep(v):
                store.add_edge(f"e{k}", f"n{u}", f"n{v}", edge_type, weight)
        return store

    def subgraph(self) -> Subgraph:
        return Subgraph(self.store(), Principal.of(USER))


def vector(i: int) -> list[float]:
    """A fixed 8-dim vector per node index, the same in every store built from the graph."""
    return [float(x) for x in np.random.default_rng(i).uniform(-1.0, 1.0, 8)]


@st.composite
def graphs(draw: st.DrawFn, max_nodes: int = 12, max_edges: int = 40) -> RandomGraph:
    n = draw(st.integers(1, max_nodes))
    node = st.integers(0, n - 1)
    edge = st.tuples(node, node, st.sampled_from(list(EdgeType)), st.floats(0.1, 1.0).map(lambda w: round(w, 3)))
    text = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)
    return RandomGraph(
        types=draw(st.lists(st.sampled_from(list(NodeType)), min_size=n, max_size=n)),
        confidences=draw(st.lists(st.floats(0.1, 1.0).map(lambda c: round(c, 3)), min_size=n, max_size=n)),
        times=draw(st.lists(st.integers(0, 90 * 86_400_000), min_size=n, max_size=n)),
        texts=draw(st.lists(text, min_size=n, max_size=n)),
        edges=draw(st.lists(edge, max_size=max_edges)),
    )


@st.composite
def shared_graphs(draw: st.DrawFn) -> RandomGraph:
    """A graph whose nodes are spread over the four layers and two users."""
    graph = draw(graphs(max_nodes=14))
    layers = draw(st.lists(st.sampled_from(["SYSTEM", "ORGANIZATION", "TEAM", "USER"]), min_size=graph.n,
                           max_size=graph.n))  # fmt: skip
    owners = draw(st.lists(st.sampled_from([USER, "bob"]), min_size=graph.n, max_size=graph.n))
    return RandomGraph(graph.types, graph.confidences, graph.times, graph.texts, graph.edges, layers, owners)
