"""BM25 (index against its slow path and a brute-force formula), similarity and hybrid RRF."""

from __future__ import annotations

import math
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.processors.graph.search import RRF_K, TextQuery, bm25, bm25_scan, hybrid, similarity
from engram.processors.graph.store import GraphStore, NodeSpec
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import NodeType, Principal
from engram.processors.retrieval.text import query_terms, terms
from tests.graph.graphs import USER, WORDS, RandomGraph, graphs

queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=3).map(" ".join)


def _brute_bm25(texts: list[str], query: str, k1: float = 1.2, b: float = 0.75) -> list[float]:
    docs = [Counter(terms(t)) for t in texts]
    avgdl = sum(sum(d.values()) for d in docs) / len(docs) or 1e-9
    out = []
    for doc in docs:
        score = 0.0
        for term in query_terms(query):
            df = sum(1 for d in docs if term in d)
            if doc.get(term):
                idf = math.log((len(docs) - df + 0.5) / (df + 0.5) + 1.0)
                tf = doc[term]
                score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * sum(doc.values()) / avgdl))
        out.append(score)
    return out


@given(graphs(), queries)
def test_bm25_index_ranks_exactly_as_its_scan_and_the_formula(graph: RandomGraph, query: str) -> None:
    sub = graph.subgraph()
    fast, slow = bm25(sub, TextQuery(query, limit=20)), bm25_scan(sub, TextQuery(query, limit=20))
    assert [m.node_id for m in fast.matches] == [m.node_id for m in slow.matches]
    assert [m.score for m in fast.matches] == pytest.approx([m.score for m in slow.matches])
    expected = _brute_bm25(graph.texts, query)
    assert {m.node_id: m.score for m in fast.matches} == pytest.approx(
        {f"n{i}": s for i, s in enumerate(expected) if s > 0}
    )


@given(graphs(), queries)
def test_bm25_keeps_only_the_asked_types(graph: RandomGraph, query: str) -> None:
    result = bm25(graph.subgraph(), TextQuery(query, limit=20, types=frozenset({NodeType.FACT})))
    assert all(m.node_type == "fact" for m in result.matches)


def _vector_graph(vectors: list[list[float]]) -> Subgraph:
    store = GraphStore()
    for i, vector in enumerate(vectors):
        text = "api limit" if i % 2 else "cache"
        store.add_node(f"n{i}", NodeSpec(NodeType.FACT, owner=USER, text=text), vector)
    return Subgraph(store, Principal.of(USER))


vectors = st.lists(st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1),
                   min_size=1, max_size=10)  # fmt: skip


@given(vectors, st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1))
def test_similarity_is_cosine_ranked(rows: list[list[float]], probe: list[float]) -> None:
    result = similarity(_vector_graph(rows), probe, limit=len(rows))
    cosines = [float(np.dot(r, probe) / np.linalg.norm(r) / np.linalg.norm(probe)) for r in rows]
    assert [m.score for m in result.matches] == pytest.approx(sorted(cosines, reverse=True), abs=1e-5)


@given(vectors, st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda v: np.linalg.norm(v) > 0.1))
def test_hybrid_fuses_the_two_rankings_by_reciprocal_rank(rows: list[list[float]], probe: list[float]) -> None:
    sub = _vector_graph(rows)
    text = bm25(sub, TextQuery("api limit", limit=100)).matches
    vector = similarity(sub, probe, limit=100).matches
    fused: dict[str, float] = {}
    for ranking in (text, vector):
        for rank, match in enumerate(ranking, start=1):
            fused[match.node_id] = fused.get(match.node_id, 0.0) + 1.0 / (RRF_K + rank)
    result = hybrid(sub, TextQuery("api limit", limit=len(rows)), probe)
    assert {m.node_id: m.score for m in result.matches} == pytest.approx(fused)
    scores = [m.score for m in result.matches]
    assert scores == sorted(scores, reverse=True)
