"""BM25 weights of a fixed set of nodes, for re-scoring a cached neighbourhood on an SLB hit.

A hit must rank the cached neighbourhood for the *new* query as well as the global search would.
Cosine alone loses the keyword signal that the hybrid search had, so the hit path fuses cosine with
BM25. `TermMatrix` precomputes the BM25 weight of every (node, term) pair once (Lucene idf,
k1/b saturation and length norm baked in, global statistics over the nodes it was built from) as
per-term postings; scoring a neighbourhood is a binary search per query term:
O(|query| · |neighbourhood| · log df).
Same analyzer as the retrieval package's BM25 (`processors.retrieval.text`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from processors.retrieval.bm25 import BM25Params
from processors.retrieval.text import query_terms, terms


@runtime_checkable
class NodeTerms(Protocol):
    def term_scores(self, query: str, node_ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of each node for `query` (0 for unknown nodes or no shared term)."""
        ...


class TermMatrix:
    """Per-term postings (sorted node rows, BM25 weights) as numpy arrays."""

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
        self.postings: dict[str, tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]] = {}
        for term, (rows, weights) in postings.items():
            df = len(rows)
            idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
            self.postings[term] = (np.asarray(rows, dtype=np.int64), idf * np.asarray(weights, dtype=np.float64))

    def rows(self, node_ids: Sequence[str]) -> npt.NDArray[np.int64]:
        return np.fromiter((self.row.get(n, -1) for n in node_ids), dtype=np.int64, count=len(node_ids))

    def term_scores(self, query: str, node_ids: Sequence[str]) -> npt.NDArray[np.float64]:
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
