"""BM25 weights of a fixed set of nodes laid out for repeated scoring (the SLB's hit path).

`NeighbourhoodTerms` holds the (term, position, weight) triples of M nodes sorted by term id, so
scoring a query costs two binary searches and one scatter-add per query term, O(|query| · log(M·t)),
independent of the memory's size. `view_layout` builds one from the `MemoryView`'s own BM25 index:
the weights are those `bm25.bm25_scores` gives these nodes (same statistics, same formula), fixed
when the layout is built.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.bm25 import (
    ArchiveStatistics,
    BM25Params,
    Mask,
    PostingIndex,
    corpus_statistics,
    document_frequencies,
    idf,
    weights,
    with_archive,
)
from engram.processors.retrieval.text import query_terms

Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class NeighbourhoodTerms:
    """BM25 weights of M nodes: triples sorted by term id (stable, so positions ascend per term)."""

    size: int
    vocabulary: dict[str, int]
    term_ids: Ints
    positions: Ints
    weights: Floats

    def scores(self, query: str) -> Floats:
        """BM25 score of each of the M nodes for `query` (terms added in query order)."""
        out = np.zeros(self.size, dtype=np.float64)
        wanted = [t for term in query_terms(query) if (t := self.vocabulary.get(term)) is not None]
        if not wanted:
            return out
        lows = np.searchsorted(self.term_ids, wanted, side="left").tolist()
        highs = np.searchsorted(self.term_ids, wanted, side="right").tolist()
        for lo, hi in zip(lows, highs, strict=True):
            if hi > lo:  # one weight per (node, term): positions inside a term are distinct
                out[self.positions[lo:hi]] += self.weights[lo:hi]
        return out


def sorted_layout(
    size: int, vocabulary: dict[str, int], term_ids: Ints, positions: Ints, w: Floats
) -> NeighbourhoodTerms:
    """The triples sorted by term id (stable: positions stay ascending within a term)."""
    order = np.argsort(term_ids, kind="stable")
    return NeighbourhoodTerms(size, vocabulary, term_ids[order], positions[order], w[order])


@dataclass(frozen=True, slots=True)
class PlacedNode:
    """One node of the neighbourhood: its position there, its part (index, mask) and row (-1: a node
    that left RAM, always searchable, its length its terms' frequencies), and its distinct terms
    with their frequencies (``PostingIndex.counts``)."""

    position: int
    part: int
    row: int
    terms: Sequence[str]
    tfs: Sequence[int]


def view_layout(
    size: int, parts: Sequence[tuple[PostingIndex, Mask]], nodes: Sequence[PlacedNode], params: BM25Params,
    archive: ArchiveStatistics | None = None,
) -> NeighbourhoodTerms:  # fmt: skip
    """The layout of ``size`` positions from the nodes placed in ``parts`` (the blocks they live in,
    with their searchable masks, which give the statistics with ``archive``'s documents, held
    elsewhere); a node outside its mask weighs nothing."""
    docs, avgdl = with_archive(*corpus_statistics(parts), archive)
    kept = [node for node in nodes if node.row < 0 or parts[node.part][1][node.row]]
    flat = list(chain.from_iterable(node.terms for node in kept))
    # Ids in order of first occurrence, so equal inputs give equal layouts.
    vocabulary = {term: i for i, term in enumerate(dict.fromkeys(flat))}
    ids = np.fromiter(map(vocabulary.__getitem__, flat), dtype=np.int64, count=len(flat))
    tfs = np.fromiter(chain.from_iterable(node.tfs for node in kept), dtype=np.float64, count=len(flat))
    per_node = np.fromiter((len(node.terms) for node in kept), dtype=np.int64, count=len(kept))
    positions = np.repeat(np.fromiter((node.position for node in kept), dtype=np.int64, count=len(kept)), per_node)
    lengths = np.repeat(_lengths(parts, kept), per_node)
    frequencies = document_frequencies(parts, list(vocabulary))
    if archive is not None:
        frequencies = frequencies + np.fromiter((archive.df.get(t, 0) for t in vocabulary), np.float64, len(vocabulary))
    idfs = idf(docs, frequencies)
    w = weights(idfs[ids], tfs, lengths, avgdl, params)
    return sorted_layout(size, vocabulary, ids, positions, w)


def _lengths(parts: Sequence[tuple[PostingIndex, Mask]], nodes: Sequence[PlacedNode]) -> Floats:
    """Each node's document length in terms, from its part's index."""
    all_lengths = [index.lengths() for index, _ in parts]
    return np.fromiter(
        (all_lengths[n.part][n.row] if n.row >= 0 else sum(n.tfs) for n in nodes), dtype=np.float64, count=len(nodes)
    )
