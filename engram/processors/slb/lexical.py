"""BM25 weights of a fixed set of nodes, for re-scoring a cached neighbourhood on an SLB hit.

A hit must rank the cached neighbourhood for the *new* query as well as the global search would.
Cosine alone loses the keyword signal that the hybrid search had, so the hit path fuses cosine with
BM25. `TermMatrix` precomputes the BM25 weight of every (node, term) pair once (Lucene idf,
k1/b saturation and length norm baked in, global statistics over the nodes it was built from) as
per-term postings; scoring a neighbourhood is a binary search per query term:
O(|query| · |neighbourhood| · log df).

`TermMatrix.neighbourhood` lays the weights of one neighbourhood out once (when an SLB entry is
filled) as `NeighbourhoodTerms` (`processors.retrieval.layout`, which the worker's `MemoryView`
builds from its own index): the (term, position, weight) triples of its M nodes sorted by term id,
so a hit costs two binary searches and one scatter-add per query term, O(|query| · log(M·t)),
independent of the memory's size. Both give bit-identical scores (same terms, same additions in
the same order). Same analyzer as the retrieval package's BM25 (`processors.retrieval.text`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.bm25 import BM25Params
from engram.processors.retrieval.layout import NeighbourhoodTerms, sorted_layout
from engram.processors.retrieval.text import query_terms, terms

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@runtime_checkable
class NodeTerms(Protocol):
    def term_scores(self, query: str, node_ids: Sequence[str]) -> Floats:
        """BM25 score of each node for `query` (0 for unknown nodes or no shared term)."""
        ...


@runtime_checkable
class NeighbourhoodLayout(Protocol):
    """A `NodeTerms` that can also lay out one neighbourhood's weights for repeated scoring."""

    def neighbourhood(self, node_ids: Sequence[str]) -> NeighbourhoodTerms: ...


class TermMatrix:
    """Per-term postings (sorted node rows, BM25 weights) and per-node term rows, as numpy arrays."""

    def __init__(self, node_ids: Sequence[str], texts: Sequence[str], params: BM25Params | None = None) -> None:
        p = params or BM25Params()
        self.row = {node_id: i for i, node_id in enumerate(node_ids)}
        counts = [Counter(terms(t)) for t in texts]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        mean_length = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, c in enumerate(counts):
            norm = p.k1 * (1 - p.b + p.b * lengths[i] / mean_length)
            for term, tf in c.items():
                rows, weights = postings.setdefault(term, ([], []))
                rows.append(i)
                weights.append(tf * (p.k1 + 1) / (tf + norm))
        n = len(counts)
        self.vocabulary = {term: term_id for term_id, term in enumerate(postings)}
        self.postings: dict[str, tuple[Ints, Floats]] = {}
        for term, (rows, weights) in postings.items():
            df = len(rows)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            self.postings[term] = (np.asarray(rows, dtype=np.int64), idf * np.asarray(weights, dtype=np.float64))
        self._forward = self._forward_rows(n)

    def _forward_rows(self, n: int) -> list[tuple[Ints, Floats]]:
        """Per node row: its term ids and their weights (the postings, transposed)."""
        term_lists: list[list[int]] = [[] for _ in range(n)]
        weight_lists: list[list[float]] = [[] for _ in range(n)]
        for term, (rows, weights) in self.postings.items():
            term_id = self.vocabulary[term]
            for row, weight in zip(rows.tolist(), weights.tolist(), strict=True):
                term_lists[row].append(term_id)
                weight_lists[row].append(weight)
        return [
            (np.asarray(t, dtype=np.int64), np.asarray(w, dtype=np.float64))
            for t, w in zip(term_lists, weight_lists, strict=True)
        ]

    def rows(self, node_ids: Sequence[str]) -> Ints:
        return np.fromiter((self.row.get(n, -1) for n in node_ids), dtype=np.int64, count=len(node_ids))

    def term_scores(self, query: str, node_ids: Sequence[str]) -> Floats:
        rows = self.rows(node_ids)
        out = np.zeros(len(node_ids), dtype=np.float64)
        for term in query_terms(query):
            posting = self.postings.get(term)
            if posting is None:
                continue
            post_rows, weights = posting
            at = np.searchsorted(post_rows, rows).clip(max=len(post_rows) - 1)
            out += np.where(post_rows[at] == rows, weights[at], 0.0)
        return out

    def neighbourhood(self, node_ids: Sequence[str]) -> NeighbourhoodTerms:
        """The weights of these nodes laid out for `NeighbourhoodTerms.scores` (unknown ids score 0)."""
        rows = self.rows(node_ids).tolist()
        known = [(pos, self._forward[row]) for pos, row in enumerate(rows) if row >= 0]
        if not known:
            empty_i, empty_f = np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64)
            return NeighbourhoodTerms(len(node_ids), self.vocabulary, empty_i, empty_i, empty_f)
        term_ids = np.concatenate([t for _, (t, _) in known])
        weights = np.concatenate([w for _, (_, w) in known])
        positions = np.repeat(np.asarray([pos for pos, _ in known], dtype=np.int64), [len(t) for _, (t, _) in known])
        return sorted_layout(len(node_ids), self.vocabulary, term_ids, positions, weights)
