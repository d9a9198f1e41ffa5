"""Centrality and path queries against networkx on small random graphs."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given, settings

from engram.processors.graph.centrality import (
    CentralityQuery,
    betweenness,
    betweenness_vector,
    degree_vector,
    pagerank_vector,
)
from engram.processors.graph.paths import bfs_path, dijkstra_path
from engram.processors.graph.types import EdgeType, NodeType
from tests.graph.graphs import RandomGraph, graphs


def _multi(graph: RandomGraph) -> nx.MultiDiGraph[int]:
    """The graph as the engine sees it: self-loops dropped, parallel edges kept."""
    g: nx.MultiDiGraph[int] = nx.MultiDiGraph()
    g.add_nodes_from(range(graph.n))
    g.add_edges_from((u, v, {"weight": float(np.float32(w))}) for u, v, _, w in graph.edges if u != v)
    return g


def _simple(graph: RandomGraph) -> nx.DiGraph[int]:
    """Parallel edges collapsed; an edge keeps its lightest weight (what a shortest path uses)."""
    g: nx.DiGraph[int] = nx.DiGraph()
    g.add_nodes_from(range(graph.n))
    for u, v, data in _multi(graph).edges(data=True):
        if not g.has_edge(u, v) or data["weight"] < g[u][v]["weight"]:
            g.add_edge(u, v, weight=data["weight"])
    return g


@given(graphs())
def test_pagerank_matches_networkx_with_dangling_mass_spread(graph: RandomGraph) -> None:
    rank, _, converged = pagerank_vector(graph.subgraph(), CentralityQuery(tolerance=1e-10, max_iterations=1000))
    expected = nx.pagerank(_multi(graph), alpha=0.85, tol=1e-12, max_iter=10_000, weight=None)
    assert converged
    assert rank.sum() == pytest.approx(1.0)
    assert rank.tolist() == pytest.approx([expected[i] for i in range(graph.n)], abs=1e-6)


@given(graphs(max_nodes=12).filter(lambda g: g.n >= 2))
def test_degree_matches_networkx(graph: RandomGraph) -> None:
    g = _multi(graph)
    sub = graph.subgraph()
    for direction, reference in (("both", nx.degree_centrality), ("in", nx.in_degree_centrality),
                                 ("out", nx.out_degree_centrality)):  # fmt: skip
        expected = reference(g)
        assert degree_vector(sub, direction).tolist() == pytest.approx([expected[i] for i in range(graph.n)])


@given(graphs())
def test_exact_betweenness_matches_networkx(graph: RandomGraph) -> None:
    scores = betweenness_vector(graph.subgraph(), np.arange(graph.n))
    expected = nx.betweenness_centrality(_simple(graph), normalized=False)
    assert scores.tolist() == pytest.approx([expected[i] for i in range(graph.n)], abs=1e-9)


@settings(max_examples=20)
@given(graphs(max_nodes=12))
def test_sampled_betweenness_scales_the_sources_it_takes(graph: RandomGraph) -> None:
    """Below the exact limit every node is a source; above it, n / samples times the sampled sum."""
    sub = graph.subgraph()
    sampled = betweenness(sub, CentralityQuery(limit=graph.n, samples=2, exact_limit=1))
    exact = betweenness(sub, CentralityQuery(limit=graph.n))
    assert exact.sources == graph.n
    if graph.n > 2:
        assert sampled.sources == 2
        assert sum(s.score for s in sampled.scores) <= sum(s.score for s in exact.scores) * graph.n / 2 + 1e-9


@given(graphs())
def test_bidirectional_bfs_finds_a_shortest_path(graph: RandomGraph) -> None:
    g, sub = _simple(graph), graph.subgraph()
    for source in range(graph.n):
        for target in range(graph.n):
            path = bfs_path(sub, source, target)
            if nx.has_path(g, source, target):
                assert path.found and path.hops == nx.shortest_path_length(g, source, target)
                hops = [int(node[1:]) for node in path.nodes]
                assert hops[0] == source and hops[-1] == target
                assert all(g.has_edge(a, b) for a, b in zip(hops, hops[1:], strict=False))
            else:
                assert not path.found


def test_bfs_stops_at_its_depth_limit() -> None:
    chain = RandomGraph([NodeType.FACT] * 5, [1.0] * 5, [0] * 5, [""] * 5,
                        [(i, i + 1, EdgeType.RELATED_TO, 1.0) for i in range(4)])  # fmt: skip
    sub = chain.subgraph()
    assert bfs_path(sub, 0, 4).hops == 4
    assert not bfs_path(sub, 0, 4, max_depth=3).found


@given(graphs())
def test_bidirectional_dijkstra_matches_networkx(graph: RandomGraph) -> None:
    g, sub = _simple(graph), graph.subgraph()
    for source in range(graph.n):
        for target in range(graph.n):
            path = dijkstra_path(sub, source, target)
            if nx.has_path(g, source, target):
                assert path.found
                assert path.cost == pytest.approx(nx.dijkstra_path_length(g, source, target))
                hops = [int(node[1:]) for node in path.nodes]
                assert sum(g[a][b]["weight"] for a, b in zip(hops, hops[1:], strict=False)) == pytest.approx(path.cost)
            else:
                assert not path.found
