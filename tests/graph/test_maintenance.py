"""Consolidation (duplicates, contradictions, promotions, orphans) and drift against brute force."""

from __future__ import annotations

from dataclasses import replace
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.processors.graph.maintenance import ConsolidationQuery, DriftQuery, consolidate, drift
from engram.processors.graph.store import STATEMENT_TYPES
from engram.processors.graph.types import EdgeType, NodeType
from engram.processors.retrieval.text import terms
from tests.graph.graphs import RandomGraph, graphs


@given(graphs(max_nodes=16), st.sampled_from([0.5, 0.7, 0.9, 1.0]), st.data())
def test_duplicates_are_every_same_type_and_polarity_pair_at_or_over_the_threshold(
    graph: RandomGraph, threshold: float, data: st.DataObject
) -> None:
    negate = data.draw(st.lists(st.booleans(), min_size=graph.n, max_size=graph.n))
    graph = replace(graph, texts=[("not " if neg else "") + t for neg, t in zip(negate, graph.texts, strict=True)])
    words = [set(terms(t)) for t in graph.texts]
    negated = [t.startswith("not ") for t in graph.texts]
    expected = set()
    for a, b in combinations(range(graph.n), 2):
        union = words[a] | words[b]
        alike = graph.types[a] == graph.types[b] and negated[a] == negated[b]
        if alike and union and len(words[a] & words[b]) / len(union) >= threshold:
            expected.add(frozenset({f"n{a}", f"n{b}"}))
    report = consolidate(graph.subgraph(), ConsolidationQuery(threshold=threshold, limit=10_000))
    assert {frozenset({d.keep, d.duplicate}) for d in report.duplicates} == expected
    conf = dict(zip((f"n{i}" for i in range(graph.n)), graph.confidences, strict=True))
    assert all(conf[d.keep] >= conf[d.duplicate] for d in report.duplicates)
    assert not report.applied


@given(graphs(max_nodes=10), st.data())
def test_contradictions_pair_opposite_polarities_not_yet_linked(graph: RandomGraph, data: st.DataObject) -> None:
    negated = data.draw(st.lists(st.booleans(), min_size=graph.n, max_size=graph.n))
    graph = replace(graph, texts=[("not " if neg else "") + t for neg, t in zip(negated, graph.texts, strict=True)])
    linked = {frozenset({u, v}) for u, v, t, _ in graph.edges if t == EdgeType.CONTRADICTS and u != v}
    expected = set()
    for a, b in combinations(range(graph.n), 2):
        statements = graph.types[a] in STATEMENT_TYPES and graph.types[b] in STATEMENT_TYPES
        same = terms(graph.texts[a].removeprefix("not ")) == terms(graph.texts[b].removeprefix("not "))
        opposite = terms(graph.texts[a]) and negated[a] != negated[b]
        if statements and same and opposite and frozenset({a, b}) not in linked:
            expected.add(frozenset({f"n{a}", f"n{b}"}))
    report = consolidate(graph.subgraph(), ConsolidationQuery(limit=10_000))
    assert {frozenset({c.a, c.b}) for c in report.contradictions} == expected


@given(graphs())
def test_promotions_and_orphans_as_defined(graph: RandomGraph) -> None:
    supporters: dict[int, set[int]] = {v: set() for v in range(graph.n)}
    touched = set()
    for u, v, t, _ in graph.edges:
        if u != v:
            touched |= {u, v}
            if t == EdgeType.SUPPORTS:
                supporters[v].add(u)
            elif t == EdgeType.CAUSED_BY:
                supporters[u].add(v)
    report = consolidate(graph.subgraph(), ConsolidationQuery(limit=10_000))
    conf = [float(np.float32(c)) for c in graph.confidences]
    assert report.promotions == [f"n{v}" for v in range(graph.n) if graph.types[v] == NodeType.INFERENCE
                                 and conf[v] > 0.9 and len(supporters[v]) >= 3]  # fmt: skip
    assert report.orphans == [f"n{v}" for v in range(graph.n) if v not in touched]


def test_drift_follows_a_supersedes_chain_in_time_order() -> None:
    day = 86_400_000
    chain = RandomGraph(
        types=[NodeType.FACT, NodeType.CORRECTION, NodeType.CORRECTION, NodeType.FACT],
        confidences=[0.6, 0.7, 0.9, 1.0],
        times=[0, 2 * day, 4 * day, day],
        texts=["lives in paris", "lives in berlin", "lives in rome", "likes tea"],
        edges=[(1, 0, EdgeType.SUPERSEDES, 1.0), (2, 1, EdgeType.SUPERSEDES, 1.0)],
    )
    result = drift(chain.subgraph(), DriftQuery())
    top = result.topics[0]
    assert [(s.old, s.new) for s in top.trajectory] == [("n0", "n1"), ("n1", "n2")]
    assert top.nodes == 3 and top.stability == round(1 / 3, 6)
    assert top.direction == pytest.approx(0.15)
    assert top.revisions_per_day == 0.5
    assert result.topics[-1].stability == 1.0
    topic = drift(chain.subgraph(), DriftQuery(topic="tea"))
    assert [t.nodes for t in topic.topics] == [1]
