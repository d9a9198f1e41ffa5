"""An SLB entry's neighbourhood laid out for scoring: built once per fill, reused by every hit.

What a hit costs should depend on the neighbourhood's size M, not on the memory's size N, and
should not be dominated by Python per-node work. `ScoringLayout` holds, for the entry's node ids
in order: their vectors as one (M, d) float32 block, their BM25 weights laid out per term
(`NeighbourhoodTerms`), and the rank of each id in sorted order (ties broken by id with an integer
sort, no string compares). It is derived state: never persisted (`SlbEntry.to_state` leaves it
out), rebuilt on demand after a restore or after prefetch staged more nodes, and tied to the
providers it was built from (`built_from`), so scoring with other providers rebuilds it.

It is a snapshot at fill time: a node's vector or BM25 weight that changes afterwards is not seen.
Entries are short-lived (`SlbConfig.max_age_events` memory events, dropped when a node they hold
is removed), which bounds that staleness. Memory: M·d·4 bytes of vectors plus ~12 bytes per
(node, term) pair, per entry that has been scored.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.layout import NeighbourhoodTerms

Vectors = npt.NDArray[np.float32]
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ScoringLayout:
    node_ids: tuple[str, ...]
    vectors: Vectors | None
    terms: NeighbourhoodTerms | None
    id_rank: Ints
    built_from: tuple[object, object]

    def matches(self, node_ids: tuple[str, ...], vectors: object, lexical: object) -> bool:
        """Built for exactly this tuple of ids (identity: `SlbEntry.stage` replaces the tuple)
        and these providers."""
        return self.node_ids is node_ids and self.built_from[0] is vectors and self.built_from[1] is lexical


class MatrixVectors:
    """`NodeVectors` over one dense matrix of L2-normalized rows (a frozen memory, e.g. a benchmark's)."""

    def __init__(self, ids: Sequence[str], matrix: Vectors) -> None:
        self.row = {node_id: i for i, node_id in enumerate(ids)}
        self.matrix = matrix

    def node_vectors(self, node_ids: Sequence[str]) -> Vectors:
        return self.matrix[[self.row[n] for n in node_ids]]


def id_ranks(node_ids: Sequence[str]) -> Ints:
    """Rank of each id in ascending string order (equal ids share a rank)."""
    if not node_ids:
        return np.zeros(0, dtype=np.int64)
    ordered = sorted(set(node_ids))
    rank = {node_id: i for i, node_id in enumerate(ordered)}
    return np.fromiter((rank[n] for n in node_ids), dtype=np.int64, count=len(node_ids))
