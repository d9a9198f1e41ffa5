"""An incremental BM25 inverted index over the rows of one memory partition.

Why our own index rather than a library (measured, see the retrieval report): memory grows one
turn at a time, so the index must take a document in O(terms) without re-indexing. ``bm25s``
builds an immutable sparse matrix (every new document means a rebuild) and ``rank-bm25`` scores
by a Python loop over every document per query (O(N)). Here each term owns a growable pair of
numpy arrays (row, term frequency): appending a document touches only its own terms, and a query
touches only the postings of its terms, vectorized.

Rows are append-only; a removed or replaced document is a tombstone that the caller's ``allowed``
mask excludes, until the owner compacts the index (``kept``: the live rows renumbered in order).
Corpus statistics (N, df, avgdl) are computed over the *allowed* rows only, so data a
caller may not see never changes the scores of data it may see (ReBAC before similarity).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.int64]
Scores = npt.NDArray[np.float64]
Mask = npt.NDArray[np.bool_]
Pairs = npt.NDArray[np.int32]  # (row, term frequency) per posting


@dataclass(frozen=True, slots=True)
class BM25Params:
    """Okapi BM25 with the Lucene idf ``ln(1 + (N - df + 0.5) / (df + 0.5))``. Defaults are
    Anserini's (k1=0.9, b=0.4), suited to short documents such as chat turns."""

    k1: float = 0.9
    b: float = 0.4


class _Postings:
    """One term's postings in a block: (row, term frequency) pairs in one int32 array. A user's
    block holds thousands of terms with a posting or two each, so the fixed cost per term is most
    of the index (`engram bench ram`): one array header instead of two, room for two pairs to
    start, and 8 bytes a posting instead of 16 (both are integers, exact in int32)."""

    __slots__ = ("pairs", "size")

    def __init__(self) -> None:
        self.pairs: Pairs = np.empty((2, 2), dtype=np.int32)
        self.size = 0

    def append(self, row: int, tf: int) -> None:
        if self.size == self.pairs.shape[0]:
            self.pairs = np.resize(self.pairs, (self.size * 2, 2))
        self.pairs[self.size, 0] = row
        self.pairs[self.size, 1] = tf
        self.size += 1


class PostingIndex:
    """Term -> (rows, term frequencies), plus document lengths in terms and each document's terms
    (interned, so a term is stored once), indexed by row."""

    def __init__(self) -> None:
        self._postings: dict[str, _Postings] = {}
        self._lengths = np.zeros(64, dtype=np.float64)
        self._rows = 0
        self._counts: list[tuple[tuple[str, ...], tuple[int, ...]]] = []

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
        self._counts.extend([((), ())] * (row - len(self._counts)))
        counts = Counter(sys.intern(t) for t in tokens)
        self._counts.append((tuple(counts), tuple(counts.values())))
        for term, tf in counts.items():
            postings = self._postings.get(term)
            if postings is None:
                postings = self._postings[term] = _Postings()
            postings.append(row, tf)

    def kept(self, rows: Rows) -> PostingIndex:
        """A new index of only ``rows`` (increasing), renumbered 0, 1, ... in that order: every
        kept document's terms, frequencies and length as here, so scores over them are unchanged."""
        out = PostingIndex()
        out._lengths = self._lengths[rows] if rows.shape[0] else np.zeros(64, dtype=np.float64)
        out._rows = int(rows.shape[0])
        out._counts = [self._counts[row] for row in rows.tolist()]
        found = out._postings
        for row, (terms, tfs) in enumerate(out._counts):
            for term, tf in zip(terms, tfs, strict=True):
                postings = found.get(term)
                if postings is None:
                    postings = found[term] = _Postings()
                postings.append(row, tf)
        return out

    def counts(self, row: int) -> tuple[tuple[str, ...], tuple[int, ...]]:
        """The distinct terms of document ``row`` (in order of first occurrence) and their
        frequencies there."""
        return self._counts[row]

    def document_counts(self, terms: Sequence[str]) -> Scores:
        """How many documents hold each term, tombstones included (no mask)."""
        get = self._postings.get
        return np.fromiter(
            ((p.size if (p := get(t)) is not None else 0) for t in terms), dtype=np.float64, count=len(terms)
        )

    def pairs(self, term: str) -> Pairs | None:
        """The term's postings, (row, term frequency) per row holding it, in row order (a view: read,
        do not keep)."""
        postings = self._postings.get(term)
        return None if postings is None else postings.pairs[: postings.size]


def corpus_statistics(parts: Sequence[tuple[PostingIndex, Mask]]) -> tuple[int, float]:
    """(documents, mean document length) over the masked rows of every part."""
    docs = sum(int(mask.sum()) for _, mask in parts)
    if docs == 0:
        return 0, 1e-9
    total_len = sum(float(index.lengths()[mask].sum()) for index, mask in parts)
    return docs, max(total_len / docs, 1e-9)


def masked_postings(parts: Sequence[tuple[PostingIndex, Mask]], term: str) -> list[tuple[int, Rows, Scores]]:
    """Per part holding ``term``: (part, rows, term frequencies), masked rows only."""
    out: list[tuple[int, Rows, Scores]] = []
    for i, (index, mask) in enumerate(parts):
        pairs = index.pairs(term)
        if pairs is not None:
            kept = pairs[mask[pairs[:, 0]]]
            out.append((i, kept[:, 0].astype(np.int64), kept[:, 1].astype(np.float64)))
    return out


def document_frequencies(parts: Sequence[tuple[PostingIndex, Mask]], terms: Sequence[str]) -> Scores:
    """Masked document frequency of each term, summed over the parts (one gather per part; none
    for a part whose rows are all unmasked, where a term's postings are its frequency)."""
    out = np.zeros(len(terms), dtype=np.float64)
    for index, mask in parts:
        if mask.all():
            out += index.document_counts(terms)
            continue
        found = [(i, pairs[:, 0]) for i, term in enumerate(terms) if (pairs := index.pairs(term)) is not None]
        if not found:
            continue
        sizes = np.fromiter((rows.shape[0] for _, rows in found), dtype=np.int64, count=len(found))
        kept = mask[np.concatenate([rows for _, rows in found])].astype(np.int64)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        out[[i for i, _ in found]] += np.add.reduceat(kept, starts)
    return out


def idf(docs: int, df: Scores | float) -> Scores:
    """Lucene's ``ln(1 + (N - df + 0.5) / (df + 0.5))``, elementwise."""
    counts = np.asarray(df, dtype=np.float64)
    return np.log1p((docs - counts + 0.5) / (counts + 0.5))


def weights(idfs: Scores | float, tfs: Scores, lengths: Scores, avgdl: float, params: BM25Params) -> Scores:
    """The BM25 weight of each (term, document): idf with k1 saturation and b length norm."""
    norm = params.k1 * (1.0 - params.b + params.b * lengths / avgdl)
    return np.asarray(idfs * tfs * (params.k1 + 1.0) / (tfs + norm), dtype=np.float64)


@dataclass(slots=True)
class ArchiveStatistics:
    """BM25's statistics of documents that left the indexes but still count in their corpus (a
    view's dormant nodes in its store): how many, their total length, and each term's document
    frequency among them. O(vocabulary), not O(documents)."""

    docs: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, terms: Sequence[str], frequencies: Sequence[int], sign: int = 1) -> None:
        """Count one document in (``sign`` -1: out) by its distinct terms and their frequencies."""
        self.docs += sign
        self.length += sign * sum(frequencies)
        for term in terms:
            self.df[term] += sign
            if self.df[term] <= 0:
                del self.df[term]

    def __iadd__(self, other: ArchiveStatistics) -> ArchiveStatistics:
        self.docs += other.docs
        self.length += other.length
        self.df.update(other.df)
        return self


def idf_weights(
    parts: Sequence[tuple[PostingIndex, Mask]], query: Sequence[str], archive: ArchiveStatistics
) -> dict[str, float]:
    """The idf `bm25_scores` gives each term of ``query`` over ``parts`` and ``archive`` (terms no
    document holds are left out): the query weights that make a store's dot product over saturated
    term frequencies (`sparse.SparseBM25`) score its documents as this corpus would."""
    docs, _ = with_archive(*corpus_statistics(parts), archive)
    out: dict[str, float] = {}
    for term in query:
        df = sum(rows.shape[0] for _, rows, _ in masked_postings(parts, term)) + archive.df.get(term, 0)
        if df and docs:
            out[term] = float(idf(docs, df))
    return out


def with_archive(docs: int, avgdl: float, archive: ArchiveStatistics | None) -> tuple[int, float]:
    """(documents, mean length) of a corpus with its archive counted in."""
    if archive is None or archive.docs == 0:
        return docs, avgdl
    total = docs + archive.docs
    return total, max((avgdl * docs + archive.length) / total, 1e-9)


def bm25_scores(
    parts: Sequence[tuple[PostingIndex, Mask]], query: Sequence[str], params: BM25Params,
    archive: ArchiveStatistics | None = None,
) -> list[tuple[Rows, Scores]]:  # fmt: skip
    """BM25 of ``query`` (distinct terms) over several indexes sharing one set of statistics.

    ``parts`` pairs each index with the mask of rows the caller may see (length == index.rows);
    ``archive``: documents no part holds that the statistics count too.
    Returns, per part, the rows with a positive score and their scores (unsorted).
    """
    docs, avgdl = with_archive(*corpus_statistics(parts), archive)
    if docs == 0 or not query:
        return [(np.empty(0, dtype=np.int64), np.empty(0)) for _ in parts]
    accumulators = [np.zeros(index.rows, dtype=np.float64) for index, _ in parts]
    for term in query:
        hits = masked_postings(parts, term)
        df = sum(rows.shape[0] for _, rows, _ in hits)
        if df == 0:
            continue
        term_idf = float(idf(docs, df + (archive.df.get(term, 0) if archive is not None else 0)))
        for i, rows, tfs in hits:
            accumulators[i][rows] += weights(term_idf, tfs, parts[i][0].lengths()[rows], avgdl, params)
    out: list[tuple[Rows, Scores]] = []
    for acc in accumulators:
        rows = np.flatnonzero(acc > 0.0)
        out.append((rows, acc[rows]))
    return out
