"""What a hit returns: the cached neighbourhood re-scored against the *new* query, plus prefetching.

Re-scoring keeps recall: the neighbourhood was ranked for the query that filled the entry, so a hit
ranks it again for this query, in O(|neighbourhood|·(d + |query|)) when the graph can hand out node
vectors (`NodeVectors`) and BM25 weights (`NodeTerms`): still independent of the corpus size.
Without either the cached order is kept. The per-entry work that does not depend on the query
(gathering the M vectors, laying out their BM25 weights, ranking ids) is done once per fill by
`layout_for` and cached on the entry (`local.ScoringLayout`); a caller may do it right after
`insert` so that hits pay only the query-dependent part (else the first hit builds it).
Atlas prefetch (seed 000 §3.5, eq. 14) stages the children of the hit concept (the nodes with a
CHILD_OF edge to it) into the entry, then its members (the turns that REF it: on Trace-built memory
the anchor is a level-0 concept, with members and no children).

A hit is served only while `serves_now` holds: every cached node (and the anchor) is still stored,
visible to the requester and not dormant. A node that went dormant after the entry was filled
(a dream archived it) would otherwise bypass the archive's rule that a dormant node answers only
among the whole memory's best few; the caller drops such an entry and searches as on a miss.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.processors.slb.buffer import SlbEntry
from engram.processors.slb.lexical import NeighbourhoodLayout, NodeTerms
from engram.processors.slb.local import ScoringLayout, id_ranks
from engram.schemas.records import Layer

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


class VisibleNodes(Protocol):
    """The requester's view of the graph (`AuthorizedGraph`): stored and visible to the requester."""

    def visible(self, node_id: str) -> bool: ...


class DormantNodes(Protocol):
    def is_dormant(self, node_id: str) -> bool: ...


def serves_now(entry: SlbEntry, walk: VisibleNodes, archive: DormantNodes | None) -> bool:
    """Whether a hit may serve ``entry`` as cached: none of its nodes (nor its anchor) is dormant in
    ``archive`` and every one is still visible through ``walk``. O(|neighbourhood|) lookups."""
    ids = entry.node_ids if entry.anchor_id is None else (*entry.node_ids, entry.anchor_id)
    if archive is not None and any(archive.is_dormant(n) for n in ids):
        return False
    return all(walk.visible(n) for n in ids)


def layout_for(entry: SlbEntry, vectors: NodeVectors | None, lexical: NodeTerms | None) -> ScoringLayout:
    """The entry's scoring layout for these providers, built (and cached on the entry) if needed."""
    found = entry.layout
    if found is not None and found.matches(entry.node_ids, vectors, lexical):
        return found
    ids = entry.node_ids
    block = None
    if vectors is not None and ids:
        block = np.ascontiguousarray(vectors.node_vectors(ids), dtype=np.float32)
    terms = lexical.neighbourhood(ids) if isinstance(lexical, NeighbourhoodLayout) else None
    layout = ScoringLayout(ids, block, terms, id_ranks(ids), (vectors, lexical))
    entry.layout = layout
    return layout


def rescore(
    entry: SlbEntry,
    query: npt.NDArray[np.float32],
    vectors: NodeVectors | None,
    lexical: NodeTerms | None = None,
    query_text: str = "",
    vector_weight: float = 0.5,
    limit: int | None = None,
) -> list[Candidate]:
    """The entry's neighbourhood ranked for this query, best first (ties by id), scores in [0, 1].

    With node vectors and BM25 weights: w·minmax(cosine) + (1 − w)·bm25/max (the hybrid search's
    fusion, restricted to the neighbourhood); with one of them, that one; with neither, the cached
    order. `limit` keeps only the best `limit` (the caller's k): same ranking, less work.
    """
    ids = entry.node_ids
    if not ids or (vectors is None and lexical is None):
        return [Candidate(n, s, "slb") for n, s in zip(ids, entry.scores, strict=True)]
    layout = layout_for(entry, vectors, lexical)
    total = np.zeros(len(ids), dtype=np.float64)
    if layout.vectors is not None:
        sims = np.vecdot(layout.vectors, np.asarray(query, dtype=np.float32).reshape(-1)).astype(np.float64)
        span = float(sims.max() - sims.min())
        weight = vector_weight if lexical is not None else 1.0
        total += weight * ((sims - sims.min()) / span if span > 0 else np.ones_like(sims))
    if lexical is not None:
        bm25 = layout.terms.scores(query_text) if layout.terms is not None else lexical.term_scores(query_text, ids)
        top = float(bm25.max())
        weight = 1.0 - vector_weight if vectors is not None else 1.0
        if top > 0:
            total += weight * bm25 / top
    picked = np.arange(len(ids))
    if limit is not None and limit < len(ids):
        # Everything scoring at least the limit-th best: ties at the cut stay, then by id.
        cut = np.partition(total, len(ids) - limit)[len(ids) - limit]
        picked = np.flatnonzero(total >= cut)
    order = picked[np.lexsort((layout.id_rank[picked], -total[picked]))]
    return [Candidate(ids[i], float(total[i]), "slb") for i in order[:limit].tolist()]


def atlas_children(graph: GraphWalk, concept_id: str, layers: Collection[Layer], limit: int) -> list[str]:
    """What a hit stages from its anchor (seed 000 §3.5, eq. 14's prefetch), authorized only: the
    concept's Atlas children (CHILD_OF into it), then its members (REF into it). On Trace-built
    memory turns anchor to level-0 concepts, which have no children: there the prefetch stages the
    other turns about the same concept, which the first search left outside the neighbourhood."""
    found = [*graph.neighbours(concept_id, layers, (CHILD_OF,)), *graph.neighbours(concept_id, layers, (REF,))]
    return list(dict.fromkeys(n.node_id for n in found if not n.outgoing))[:limit]


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
