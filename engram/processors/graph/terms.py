"""The graph's term index (seed 004 §3.1, TermIndex and DocLengths), kept current per event.

Postings are ``term -> {node: term frequency}`` dicts, so a node whose text changes leaves its old
postings in O(terms); each term's numpy arrays are materialized on first use after a change. The
analyzer is Engram's own (`processors.retrieval.text`), so the graph and the view agree on terms.
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import numpy.typing as npt

from engram.processors.graph.columns import Column
from engram.processors.retrieval.text import terms

Postings = tuple[npt.NDArray[np.int64], npt.NDArray[np.float64]]
_EMPTY: Postings = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float64))


class TermIndex:
    __slots__ = ("_arrays", "distinct", "doc_len", "node_terms", "postings", "term_ids")

    def __init__(self) -> None:
        self.postings: dict[str, dict[int, int]] = {}
        self._arrays: dict[str, Postings] = {}
        self.doc_len = Column(np.int32, 0)
        self.distinct = Column(np.int32, 0)  # distinct terms per node (Jaccard's denominators)
        self.term_ids: dict[str, int] = {}
        self.node_terms: dict[int, tuple[int, ...]] = {}  # node -> its distinct term ids

    def index(self, node: int, text: str) -> list[str]:
        """Index a node's text; returns its terms (in order, repeats kept)."""
        stems = terms(text)
        counts = Counter(stems)
        for term, tf in counts.items():
            self.postings.setdefault(term, {})[node] = tf
            self._arrays.pop(term, None)
        while self.doc_len.size <= node:
            self.doc_len.grow()
            self.distinct.grow()
        self.doc_len[node] = len(stems)
        self.distinct[node] = len(counts)
        self.node_terms[node] = tuple(self.term_ids.setdefault(t, len(self.term_ids)) for t in counts)
        return stems

    def unindex(self, node: int, text: str) -> None:
        for term in set(terms(text)):
            posting = self.postings.get(term)
            if posting is not None and posting.pop(node, None) is not None:
                self._arrays.pop(term, None)
        if node < self.doc_len.size:
            self.doc_len[node] = self.distinct[node] = 0
        self.node_terms.pop(node, None)

    def arrays(self, term: str) -> Postings:
        """The term's (nodes, term frequencies), as arrays."""
        cached = self._arrays.get(term)
        if cached is not None:
            return cached
        posting = self.postings.get(term)
        if not posting:
            return _EMPTY
        nodes = np.fromiter(posting.keys(), dtype=np.int64, count=len(posting))
        tfs = np.fromiter(posting.values(), dtype=np.float64, count=len(posting))
        self._arrays[term] = (nodes, tfs)
        return nodes, tfs

    def lengths(self, count: int, *, distinct: bool = False) -> npt.NDArray[np.int32]:
        """Per node row, its token count (or distinct term count), 0 for rows never indexed."""
        column = self.distinct if distinct else self.doc_len
        out = np.zeros(count, dtype=np.int32)
        filled = min(count, column.size)
        out[:filled] = column.values[:filled]
        return out
