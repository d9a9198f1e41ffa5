"""Retrieval queries (seed 004 §4.1-4.2 and v0.1's similarity): BM25 by index or by scan, vector
similarity, and hybrid Reciprocal Rank Fusion. All of them score only the principal's nodes: the
BM25 statistics (N, document frequencies, average length) are those of the visible nodes."""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.graph.results import Hybrid, HybridMatch, Matches, Scored
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import NODE_TYPE_NAMES, NodeType
from engram.processors.retrieval.text import query_terms, terms

K1, B = 1.2, 0.75
RRF_K = 60


@dataclass(frozen=True, slots=True)
class TextQuery:
    text: str
    limit: int = 10
    types: frozenset[NodeType] = frozenset()


def _idf(n: int, df: int) -> float:
    return math.log((n - df + 0.5) / (df + 0.5) + 1.0)


def _avgdl(sub: Subgraph) -> float:
    lengths = sub.store.terms.lengths(len(sub.store))[sub.rows]
    return float(lengths.mean()) if sub.n else 0.0


def _type_mask(sub: Subgraph, types: frozenset[NodeType]) -> npt.NDArray[np.bool_] | None:
    return np.isin(sub.node_type, [int(t) for t in types]) if types else None


def _ranked(
    sub: Subgraph, scores: npt.NDArray[np.float64], candidates: npt.NDArray[np.int64], limit: int
) -> list[Scored]:
    """Top ``limit`` candidates by score, ties by local index (row order)."""
    if len(candidates) == 0 or limit <= 0:
        return []
    values = scores[candidates]
    if len(candidates) > limit:
        keep = np.argpartition(-values, limit - 1)[:limit]
        candidates, values = candidates[keep], values[keep]
    order = np.lexsort((candidates, -values))
    return [
        Scored(sub.node_id(int(candidates[i])), NODE_TYPE_NAMES[sub.node_type[candidates[i]]], float(values[i]))
        for i in order
    ]


def bm25_scores(sub: Subgraph, query: TextQuery) -> npt.NDArray[np.float64]:
    """BM25 of every local node (0 where no term matches), from the term index's postings."""
    scores = np.zeros(sub.n, dtype=np.float64)
    if sub.n == 0:
        return scores
    lengths = sub.store.terms.lengths(len(sub.store))
    norm_base = K1 * (1.0 - B)
    avgdl = max(_avgdl(sub), 1e-9)
    for term in query_terms(query.text):
        rows, tfs = sub.store.terms.arrays(term)
        local = sub.local[rows] if len(rows) else rows
        seen = local >= 0
        local, tfs, rows = local[seen], tfs[seen], rows[seen]
        if not len(local):
            continue
        idf = _idf(sub.n, len(local))
        denom = tfs + norm_base + K1 * B * lengths[rows] / avgdl
        scores += np.bincount(local, weights=idf * tfs * (K1 + 1.0) / denom, minlength=sub.n)
    return scores


def bm25(sub: Subgraph, query: TextQuery) -> Matches:
    """BM25 over the term index: O(q · postings)."""
    scores = bm25_scores(sub, query)
    mask = scores > 0
    types = _type_mask(sub, query.types)
    if types is not None:
        mask &= types
    return Matches(_ranked(sub, scores, np.flatnonzero(mask), query.limit), "index")


def bm25_scan(sub: Subgraph, query: TextQuery) -> Matches:
    """The checked slow path: tokenize every visible node's text and score in one O(n) pass, with
    no index. It must rank exactly as `bm25` does (the tests hold them to it)."""
    wanted = query_terms(query.text)
    docs = [Counter(terms(sub.store.texts[int(row)])) for row in sub.rows]
    lengths = np.array([sum(d.values()) for d in docs], dtype=np.float64)
    avgdl = max(float(lengths.mean()) if sub.n else 0.0, 1e-9)
    scores = np.zeros(sub.n, dtype=np.float64)
    for term in wanted:
        tf = np.array([d.get(term, 0) for d in docs], dtype=np.float64)
        df = int(np.count_nonzero(tf))
        if df == 0:
            continue
        part = _idf(sub.n, df) * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * lengths / avgdl))
        scores += np.where(tf > 0, part, 0.0)
    mask = scores > 0
    types = _type_mask(sub, query.types)
    if types is not None:
        mask &= types
    return Matches(_ranked(sub, scores, np.flatnonzero(mask), query.limit), "scan")


def cosine_scores(sub: Subgraph, vector: npt.ArrayLike) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """Cosine of every local node with ``vector`` (nodes without a vector: 0, and False in the
    mask). Only the visible rows are read: the whole matrix when the principal sees every row."""
    store = sub.store
    q = np.asarray(vector, dtype=np.float32).ravel()
    if store.vectors.dim != len(q) or sub.n == 0:
        return np.zeros(sub.n, dtype=np.float64), np.zeros(sub.n, dtype=np.bool_)
    norm = float(np.linalg.norm(q))
    q = q / norm if norm > 0 else q
    rows, has = store.vectors.take(sub.rows, len(store))
    return (rows @ q).astype(np.float64), has


def similarity(sub: Subgraph, vector: npt.ArrayLike, limit: int = 10, min_score: float = -1.0,
               types: frozenset[NodeType] = frozenset()) -> Matches:  # fmt: skip
    """v0.1's similarity query: the nearest nodes by cosine, over the visible nodes."""
    scores, has = cosine_scores(sub, vector)
    mask = has & (scores >= min_score)
    type_mask = _type_mask(sub, types)
    if type_mask is not None:
        mask &= type_mask
    return Matches(_ranked(sub, scores, np.flatnonzero(mask), limit), "vector")


def hybrid(sub: Subgraph, query: TextQuery, vector: npt.ArrayLike | None, depth: int = 100) -> Hybrid:
    """BM25 and vector rankings (each cut at ``depth``), fused by RRF with k = 60 (seed eq. 2)."""
    text_scores = bm25_scores(sub, query)
    type_mask = _type_mask(sub, query.types)
    text_mask = text_scores > 0 if type_mask is None else (text_scores > 0) & type_mask
    text_ranked = _ranked(sub, text_scores, np.flatnonzero(text_mask), depth)
    cos, has = cosine_scores(sub, vector) if vector is not None else (np.zeros(sub.n), np.zeros(sub.n, bool))
    vec_mask = has if type_mask is None else has & type_mask
    vec_ranked = _ranked(sub, cos, np.flatnonzero(vec_mask), depth)
    fused: dict[str, float] = {}
    ranks: dict[str, list[int | None]] = {}
    for which, ranking in enumerate((text_ranked, vec_ranked)):
        for rank, hit in enumerate(ranking, start=1):
            fused[hit.node_id] = fused.get(hit.node_id, 0.0) + 1.0 / (RRF_K + rank)
            ranks.setdefault(hit.node_id, [None, None])[which] = rank
    order = sorted(fused, key=lambda nid: (-fused[nid], sub.store.index[nid]))[: query.limit]
    out = []
    for node_id in order:
        local = int(sub.local[sub.store.index[node_id]])
        text_rank, vector_rank = ranks[node_id]
        node_type = NODE_TYPE_NAMES[sub.node_type[local]]
        out.append(HybridMatch(node_id, node_type, fused[node_id], text_rank, vector_rank,
                               float(text_scores[local]), float(cos[local])))  # fmt: skip
    return Hybrid(out)
