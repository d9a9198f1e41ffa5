"""An incremental BM25 inverted index over the rows of one memory partition.

Why our own index rather than a library (measured, see the retrieval report): memory grows one
turn at a time, so the index must take a document in O(terms) without re-indexing. ``bm25s``
builds an immutable sparse matrix (every new document means a rebuild) and ``rank-bm25`` scores
by a Python loop over every document per query (O(N)). Here each term owns a growable pair of
numpy arrays (row, term frequency): appending a document touches only its own terms, and a query
touches only the postings of its terms, vectorized.

Rows are append-only; a removed or replaced document is a tombstone that the caller's ``allowed``
mask excludes. Corpus statistics (N, df, avgdl) are computed over the *allowed* rows only, so data a
caller may not see never changes the scores of data it may see (ReBAC before similarity).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Okapi BM25 with the Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``. Defaults are
    Anserini's (k1=0.9, b=0.4), suited to short documents such as chat turns."""

    k1: float = 0.9
    b: float = 0.4


class _Postings:
    __slots__ = ("rows", "size", "tfs")

    def __init__(self) -> None:
        self.rows = np.empty(4, dtype=np.int64)
        self.tfs = np.empty(4, dtype=np.float64)
        self.size = 0

    def append(self, row: int, tf: int) -> None:
        if self.size == self.rows.shape[0]:
            self.rows = np.resize(self.rows, self.size * 2)
            self.tfs = np.resize(self.tfs, self.size * 2)
        self.rows[self.size] = row
        self.tfs[self.size] = tf
        self.size += 1


class PostingIndex:
    """Term -> (rows, term frequencies), plus document lengths in terms, indexed by row."""

    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._lengths = np.zeros(64, dtype=np.float64)
        self._rows = 0

    @property
    def rows(self) -> int:
        return self._rows

    def lengths(self) -> Scores:
        return self._lengths[: self._rows]

    def add(self, row: int, tokens: Sequence[str]) -> None:
        """Index ``tokens`` as document ``row``; rows must be added in increasing order."""
        if row < self._rows:
            msg = f"row {row} is already indexed (next row is {self._rows})"
            raise ValueError(msg)
        while row >= self._lengths.shape[0]:
            self._lengths = np.concatenate([self._lengths, np.zeros_like(self._lengths)])
        self._lengths[row] = len(tokens)
        self._rows = row + 1
        for term, tf in Counter(tokens).items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.append(row, tf)

    def postings(self, term: str) -> tuple[Rows, Scores] | None:
        postings = self._postings.get(term)
        if postings is None:
            return None
        return postings.rows[: postings.size], postings.tfs[: postings.size]


def bm25_scores(
    parts: Sequence[tuple[PostingIndex, Mask]], query: Sequence[str], params: BM25Params
) -> list[tuple[Rows, Scores]]:
    """BM25 of ``query`` (distinct terms) over several indexes sharing one set of statistics.

    ``parts`` pairs each index with the mask of rows the caller may see (length == index.rows).
    Returns, per part, the rows with a positive score and their scores (unsorted).
    """
    n_docs = sum(int(mask.sum()) for _, mask in parts)
    if n_docs == 0 or not query:
        return [(np.empty(0, dtype=np.int64), np.empty(0)) for _ in parts]
    total_len = sum(float(index.lengths()[mask].sum()) for index, mask in parts)
    avgdl = max(total_len / n_docs, 1e-9)
    accumulators = [np.zeros(index.rows, dtype=np.float64) for index, _ in parts]
    for term in query:
        hits: list[tuple[int, Rows, Scores]] = []
        df = 0
        for i, (index, mask) in enumerate(parts):
            found = index.postings(term)
            if found is None:
                continue
            rows, tfs = found
            keep = mask[rows]
            rows, tfs = rows[keep], tfs[keep]
            df += rows.shape[0]
            hits.append((i, rows, tfs))
        if df == 0:
            continue
        idf = float(np.log1p((n_docs - df + 0.5) / (df + 0.5)))
        for i, rows, tfs in hits:
            norm = params.k1 * (1.0 - params.b + params.b * parts[i][0].lengths()[rows] / avgdl)
            accumulators[i][rows] += idf * tfs * (params.k1 + 1.0) / (tfs + norm)
    out: list[tuple[Rows, Scores]] = []
    for acc in accumulators:
        rows = np.flatnonzero(acc > 0.0)
        out.append((rows, acc[rows]))
    return out
