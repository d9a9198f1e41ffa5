"""Belief revision, gap detection and analogy against brute-force definitions."""

from __future__ import annotations

import networkx as nx
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.processors.graph.cognitive import GapQuery, analogy, gaps, revise
from engram.processors.graph.store import GraphStore, NodeSpec
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import EdgeType, NodeType, Principal
from tests.graph.graphs import USER, RandomGraph, graphs, vector

DAY = 86_400_000


def _supporters(graph: RandomGraph) -> dict[int, set[int]]:
    """w depends on u: u SUPPORTS w, or w CAUSED_BY u (self-loops dropped, as the engine does)."""
    out: dict[int, set[int]] = {v: set() for v in range(graph.n)}
    for u, v, edge_type, _ in graph.edges:
        if u == v:
            continue
        if edge_type == EdgeType.SUPPORTS:
            out[v].add(u)
        elif edge_type == EdgeType.CAUSED_BY:
            out[u].add(v)
    return out


def _fixpoint(supporters: dict[int, set[int]], target: int) -> set[int]:
    """The least set that holds the target and every node all of whose supporters it holds."""
    fallen = {target}
    changed = True
    while changed:
        changed = False
        for w, backing in supporters.items():
            if w not in fallen and backing and backing <= fallen:
                fallen.add(w)
                changed = True
    return fallen


@given(graphs(), st.data())
def test_revision_retracts_exactly_the_least_fixpoint(graph: RandomGraph, data: st.DataObject) -> None:
    target = data.draw(st.integers(0, graph.n - 1))
    supporters = _supporters(graph)
    fallen = _fixpoint(supporters, target)
    result = revise(graph.subgraph(), target)
    assert {a.node_id for a in result.affected if a.falls} == {f"n{v}" for v in fallen - {target}}
    touched = {w for w, backing in supporters.items() if backing & fallen} - {target}
    assert {a.node_id for a in result.affected} == {f"n{v}" for v in touched}
    for a in result.affected:
        v = int(a.node_id[1:])
        share = 1.0 if a.falls else len(supporters[v] & fallen) / len(supporters[v])
        assert a.confidence_loss == pytest.approx(float(np.float32(graph.confidences[v])) * share, abs=1e-6)
    assert set(result.invalidated_decisions) == {f"n{v}" for v in fallen - {target}
                                                 if graph.types[v] == NodeType.DECISION}  # fmt: skip


def _chain_through(graph: RandomGraph) -> dict[int, int] | None:
    g = nx.DiGraph((u, v) for u, v, t, _ in graph.edges if t == EdgeType.SUPERSEDES and u != v)
    g.add_nodes_from(range(graph.n))
    if not nx.is_directed_acyclic_graph(g):
        return None
    above = {v: 0 for v in g}
    below = {v: 0 for v in g}
    for v in nx.topological_sort(g):
        for w in g.successors(v):
            above[w] = max(above[w], above[v] + 1)
    for v in reversed(list(nx.topological_sort(g))):
        for w in g.successors(v):
            below[v] = max(below[v], below[w] + 1)
    return {v: above[v] + below[v] for v in g}


def _brute_gaps(graph: RandomGraph, query: GapQuery) -> set[tuple[int, str]]:
    supporters, conf = _supporters(graph), [float(np.float32(c)) for c in graph.confidences]
    out = set()
    for v in range(graph.n):
        if graph.types[v] == NodeType.DECISION and not supporters[v]:
            out.add((v, "unjustified_decision"))
        if graph.types[v] == NodeType.INFERENCE and len(supporters[v]) == 1:
            out.add((v, "single_source_inference"))
        for w, backing in supporters.items():
            if v in backing and conf[v] < query.confidence_threshold and conf[w] > conf[v]:
                out.add((v, "low_confidence_foundation"))
            stale = (query.now_ms or 0) - graph.times[v] > query.stale_days * DAY
            if v in backing and stale and graph.types[w] == NodeType.DECISION:
                out.add((v, "stale_evidence"))
    chain = _chain_through(graph) or {}
    out |= {(v, "unstable_knowledge") for v, length in chain.items() if length >= 2}
    return out


@given(graphs())
def test_gap_detection_finds_all_five_kinds_as_defined(graph: RandomGraph) -> None:
    query = GapQuery(now_ms=90 * DAY, limit=10_000)
    result = gaps(graph.subgraph(), query)
    found = {(int(g.node_id[1:]), g.kind) for g in result.gaps}
    expected = _brute_gaps(graph, query)
    if _chain_through(graph) is None:  # a SUPERSEDES cycle: its chain length is capped, not defined
        found = {f for f in found if f[1] != "unstable_knowledge"}
        expected = {e for e in expected if e[1] != "unstable_knowledge"}
    assert found == expected
    assert sum(result.counts.values()) == len(result.gaps)
    severities = [g.severity for g in result.gaps]
    assert severities == sorted(severities, reverse=True)


def _fingerprint(graph: RandomGraph, v: int) -> np.ndarray:
    out = np.zeros(2 + len(EdgeType))
    for a, b, t, _ in graph.edges:
        if a == b:
            continue
        out[0] += b == v
        out[1] += a == v
        out[2 + int(t)] += (a == v) + (b == v)
    return out


def _cos(x: np.ndarray, y: np.ndarray) -> float:
    norm = np.linalg.norm(x) * np.linalg.norm(y)
    return float(x @ y / norm) if norm > 0 else 0.0


@given(graphs().filter(lambda g: g.n >= 2), st.data())
def test_analogy_scores_structure_and_content_as_eq_4(graph: RandomGraph, data: st.DataObject) -> None:
    anchor = data.draw(st.integers(0, graph.n - 1))
    result = analogy(graph.subgraph(), anchor)
    prints = [_fingerprint(graph, v) for v in range(graph.n)]
    vectors = [np.asarray(vector(v)) for v in range(graph.n)]  # every node has one: content is their cosine
    expected = {}
    for v in range(graph.n):
        if v != anchor:
            expected[v] = 0.6 * _cos(prints[v], prints[anchor]) + 0.4 * _cos(vectors[v], vectors[anchor])
    best = sorted(expected, key=lambda v: (-round(expected[v], 9), v))[:5]
    assert [m.score for m in result.matches] == pytest.approx([expected[v] for v in best], abs=1e-5)
    assert f"n{anchor}" not in {m.node_id for m in result.matches}


def test_analogy_content_falls_back_to_term_jaccard_without_vectors() -> None:
    store = GraphStore()
    for i, text in enumerate(["api rate limit", "api rate", "cache"]):
        store.add_node(f"n{i}", NodeSpec(NodeType.FACT, owner=USER, text=text))
    result = analogy(Subgraph(store, Principal.of(USER)), 0)
    content = {m.node_id: m.content for m in result.matches}
    assert content == pytest.approx({"n1": 2 / 3, "n2": 0.0})
