"""BM25 weights of a fixed set of nodes, for re-scoring a cached neighbourhood on an SLB hit.

A hit must rank the cached neighbourhood for the *new* query as well as the global search would.
Cosine alone loses the keyword signal that the hybrid search had, so the hit path fuses cosine with
BM25. `TermMatrix` precomputes the BM25 weight of every (node, term) pair once (Lucene idf,
k1/b saturation and length norm baked in, global statistics over the nodes it was built from);
scoring a neighbourhood is then a sparse row/column slice and a sum: O(|neighbourhood| · |query|).
Same analyzer as the retrieval package's BM25 (`processors.retrieval.text`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt
from scipy import sparse

from processors.retrieval.bm25 import BM25Params
from processors.retrieval.text import query_terms, terms


@runtime_checkable
class NodeTerms(Protocol):
    def term_scores(self, query: str, node_ids: Sequence[str]) -> npt.NDArray[np.float64]:
        """BM25 score of each node for `query` (0 for unknown nodes or no shared term)."""
        ...


class TermMatrix:
    def __init__(self, node_ids: Sequence[str], texts: Sequence[str], params: BM25Params | None = None) -> None:
        p = params or BM25Params()
        self.row = {node_id: i for i, node_id in enumerate(node_ids)}
        self.column: dict[str, int] = {}
        counts = [Counter(terms(t)) for t in texts]
        lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
        mean_length = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        df: Counter[str] = Counter()
        for c in counts:
            df.update(c.keys())
        n = len(counts)
        rows, cols, vals = [], [], []
        for i, c in enumerate(counts):
            norm = p.k1 * (1 - p.b + p.b * lengths[i] / mean_length)
            for term, tf in c.items():
                col = self.column.setdefault(term, len(self.column))
                idf = math.log(1 + (n - df[term] + 0.5) / (df[term] + 0.5))
                rows.append(i)
                cols.append(col)
                vals.append(idf * tf * (p.k1 + 1) / (tf + norm))
        self.weights = sparse.csr_matrix((vals, (rows, cols)), shape=(n, max(1, len(self.column))))

    def term_scores(self, query: str, node_ids: Sequence[str]) -> npt.NDArray[np.float64]:
        cols = [self.column[t] for t in query_terms(query) if t in self.column]
        known = [self.row.get(n, -1) for n in node_ids]
        out = np.zeros(len(node_ids), dtype=np.float64)
        if not cols:
            return out
        present = [i for i, r in enumerate(known) if r >= 0]
        if present:
            block = self.weights[[known[i] for i in present]][:, cols]
            out[present] = np.asarray(block.sum(axis=1)).reshape(-1)
        return out
