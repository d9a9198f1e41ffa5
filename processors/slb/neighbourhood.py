"""What a hit returns: the cached neighbourhood re-scored against the *new* query, plus prefetching.

Re-scoring keeps recall: the neighbourhood was ranked for the query that filled the entry, so a hit
ranks it again for this query, in O(|neighbourhood|·d) when the graph can hand out node vectors
(`NodeVectors`), which is still independent of the corpus size. Without vectors the cached order is
kept. Atlas prefetch (seed 000 §3.5, eq. 14) stages the children of the hit concept (the nodes
with a CHILD_OF edge to it) into the entry.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from processors.retrieval.types import Candidate, Neighbour, NodeRecord
from processors.slb.buffer import SlbEntry
from schemas.records import Layer

CHILD_OF: Final = "CHILD_OF"
REF: Final = "REF"
CONCEPT_KIND: Final = "concept"


class GraphWalk(Protocol):
    """The part of a `MemoryGraph` that walking needs (node lookup and authorized neighbours)."""

    def node(self, node_id: str) -> NodeRecord | None: ...

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]: ...


@runtime_checkable
class NodeVectors(Protocol):
    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        """(len(node_ids), dim) L2-normalized rows; a zero row for a node without a vector."""
        ...


def rescore(entry: SlbEntry, query: npt.NDArray[np.float32], vectors: NodeVectors | None) -> list[Candidate]:
    """The entry's neighbourhood as candidates ranked for `query` (cosine), best first, ties by id."""
    if vectors is None or not entry.node_ids:
        return [Candidate(n, s, "slb") for n, s in zip(entry.node_ids, entry.scores, strict=True)]
    matrix = vectors.node_vectors(entry.node_ids)
    sims = matrix @ np.asarray(query, dtype=np.float32).reshape(-1)
    ranked = sorted(zip(entry.node_ids, (float(s) for s in sims), strict=True), key=lambda p: (-p[1], p[0]))
    return [Candidate(node_id, score, "slb") for node_id, score in ranked]


def atlas_children(graph: GraphWalk, concept_id: str, layers: Collection[Layer], limit: int) -> list[str]:
    """Children of an Atlas concept: neighbours whose CHILD_OF edge points at it (authorized only)."""
    children = [n.node_id for n in graph.neighbours(concept_id, layers, (CHILD_OF,)) if not n.outgoing]
    return children[:limit]


def anchor_concept(graph: GraphWalk, node_ids: Sequence[str], layers: Collection[Layer]) -> str | None:
    """The concept that anchors a neighbourhood: the best-ranked concept node, else the REF target
    of the best-ranked node that has one (looking at the first few only)."""
    for node_id in node_ids[:8]:
        record = graph.node(node_id)
        if record is not None and record.kind == CONCEPT_KIND:
            return node_id
        refs = [n.node_id for n in graph.neighbours(node_id, layers, (REF,)) if n.outgoing]
        if refs:
            return refs[0]
    return None
