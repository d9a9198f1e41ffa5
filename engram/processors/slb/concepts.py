"""Atlas concepts as SLB centroids: the seed's own reading of Algorithm 1 and Eq. 14.

In the seed a centroid points to an Atlas node; a hit returns that concept's neighbourhood and
prefetches its children. `ConceptCentroids` builds that buffer for a user's turns with the Trace's
own Atlas (`processors.trace.atlas`, same thresholds as the Trace builder): one centroid per
concept at every level (the raw-space unit centroid the Trace publishes as the concept node's
embedding) and, per concept, the turns it covers: the turns that REF it (level 0) or that REF any
of its descendants (coarser levels). `lookup` is Algorithm 1's comparison; `members` is what a hit
hands to the re-scoring. Every concept staged at once is the best case for this design's hit rate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.trace.atlas import Atlas
from engram.processors.trace.config import BALANCED, TraceConfig

Vectors = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class ConceptCentroids:
    concept_ids: tuple[str, ...]
    centroids: Vectors  # (n, d) raw-space unit rows, one per concept
    members: tuple[tuple[str, ...], ...]  # per concept: covered turn ids, in placement order

    def lookup(self, query: Vectors) -> tuple[int, float]:
        """Index and cosine of the best concept for `query` ((-1, -1.0) with no concept)."""
        if not self.concept_ids:
            return -1, -1.0
        sims = np.vecdot(self.centroids, np.asarray(query, dtype=np.float32).reshape(-1))
        best = int(np.argmax(sims))
        return best, float(sims[best])


def concept_centroids(node_ids: Sequence[str], vectors: Vectors, config: TraceConfig = BALANCED) -> ConceptCentroids:
    """Place the turns in order, as the Trace builder does, and collect concept centroids and members."""
    dim = int(vectors.shape[1]) if len(vectors.shape) == 2 else 0
    atlas = Atlas("slb-concepts", dim, config.thresholds, centred=config.centre)
    direct: dict[str, list[str]] = {}
    for node_id, vector in zip(node_ids, vectors, strict=True):
        refs, _ = atlas.place(np.asarray(vector, dtype=np.float32), node_id, config.max_refs, config.max_concepts)
        for concept_id, _ in refs:
            direct.setdefault(concept_id, []).append(node_id)
    ids: list[str] = []
    rows: list[Vectors] = []
    members: list[tuple[str, ...]] = []
    for level in atlas.levels:
        if len(level) == 0:
            continue
        rows.append(level.raw_units())
        for concept_id in level.ids:
            ids.append(concept_id)
            members.append(tuple(_covered(concept_id, atlas.children, direct)))
    centroids = np.concatenate(rows) if rows else np.zeros((0, dim), dtype=np.float32)
    return ConceptCentroids(tuple(ids), centroids.astype(np.float32), tuple(members))


def _covered(concept_id: str, children: dict[str, list[str]], direct: dict[str, list[str]]) -> list[str]:
    out: list[str] = []
    stack = [concept_id]
    while stack:
        current = stack.pop()
        out.extend(direct.get(current, ()))
        stack.extend(reversed(children.get(current, [])))
    return list(dict.fromkeys(out))
