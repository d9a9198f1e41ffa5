"""BM25 as a sparse vector: the form in which a vector store holds System 1's text side.

A store with sparse vectors and an IDF modifier (Qdrant's ``Modifier.IDF``) scores a document by
``sum over the query's terms of idf(t) * w(d, t)``, computing ``idf`` from its own collection at
query time. Storing ``w(d, t)`` as BM25's saturated, length-normalized term frequency
(``tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl))``) and querying with weight 1 per distinct
term makes that score Okapi BM25, as ``processors.retrieval.bm25`` computes it in process, with two
differences a store cannot avoid:
- ``avgdl`` is fixed when a document is written (``SparseBM25.avgdl``, fitted to a sample of the
  memory's own documents; a chat turn with its speaker holds 13-16 index terms on LoCoMo's
  conversations), where the view uses its blocks' current mean;
- ``idf`` is the store's own over the collection it searches, where the view's is over the blocks
  the requester may see.

Term ids are the first four bytes of the term's BLAKE2b digest: stable across processes and
versions, with no vocabulary to keep. Two terms colliding merge into one (about one pair in a
million among 100,000 distinct terms), which only ever adds to a score.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from engram.processors.retrieval.bm25 import BM25Params
from engram.processors.retrieval.text import query_terms

NOMINAL_AVGDL: Final = 14.0


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Parallel term ids and weights, ids ascending."""

    indices: tuple[int, ...]
    values: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class SparseBM25:
    """``avgdl``: the mean document length (in index terms) each document is normalized against."""

    params: BM25Params = BM25Params()
    avgdl: float = NOMINAL_AVGDL

    @classmethod
    def fitted(cls, params: BM25Params, documents: Sequence[Sequence[str]]) -> SparseBM25:
        """Normalized against the mean length of ``documents`` (a sample of the memory's own)."""
        mean = sum(len(d) for d in documents) / len(documents) if documents else 0.0
        return cls(params, mean or NOMINAL_AVGDL)

    def document(self, terms: Sequence[str]) -> SparseVector:
        """The BM25 weight of each distinct term of a document (its index terms, repeats kept)."""
        counts = Counter(terms)
        return self.counted(tuple(counts), tuple(counts.values()))

    def counted(self, terms: Sequence[str], frequencies: Sequence[int]) -> SparseVector:
        """`document` from a document's distinct terms and their frequencies (a posting index's
        `bm25.PostingIndex.counts`)."""
        k1, b = self.params.k1, self.params.b
        norm = k1 * (1.0 - b + b * sum(frequencies) / self.avgdl)
        weights: dict[int, float] = {}
        for term, tf in zip(terms, frequencies, strict=True):
            key = term_id(term)
            weights[key] = weights.get(key, 0.0) + tf * (k1 + 1.0) / (tf + norm)
        return _vector(weights)


def query_vector(query: str) -> SparseVector:
    """Weight 1 for each distinct index term of ``query`` (a repeated word is not a boost, as in
    the view's BM25)."""
    return _vector(dict.fromkeys((term_id(t) for t in query_terms(query)), 1.0))


def weighted(weights: Mapping[str, float]) -> SparseVector:
    """A query of these terms with these weights."""
    out: dict[int, float] = {}
    for term, weight in weights.items():
        out[term_id(term)] = out.get(term_id(term), 0.0) + weight
    return _vector(out)


@lru_cache(maxsize=1 << 16)
def term_id(term: str) -> int:
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=4).digest(), "big")


def _vector(weights: dict[int, float]) -> SparseVector:
    ids = sorted(weights)
    return SparseVector(tuple(ids), tuple(weights[i] for i in ids))
