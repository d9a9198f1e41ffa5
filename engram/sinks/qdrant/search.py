"""System 1's vector side over Qdrant for one principal, with ReBAC as payload filters.

The rule (processors/rebac.py): a point is visible to (viewer v, layers L) iff its layer is in L
and, for the USER layer, it belongs to v's user; for the shared layers, its instance (payload key
``instance``, `processors.rebac.node_instance`) is one v reads. As engine-neutral `PointFilter`s
(all clauses AND) that is two searches per collection: the user's own USER points, and the points
of the shared layers in L in v's instances. Both filters run inside the engine, before any
similarity is computed; dormant points are excluded.
The hits are merged best first (ties by id), so the answer is deterministic.

The compile hot path searches the worker's in-process `MemoryView`, a mirror of these collections
fed by the same MemoryEvents (ARCHITECTURE.md, "State"); `tests/sinks/test_qdrant_search.py`
checks that both give the same top-k for every principal.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from engram.processors.rebac import SHARED_LAYERS, USER_LAYER, Viewer, ordered_layers
from engram.schemas.records import Layer
from engram.sinks.qdrant.plan import collection_for_kind
from engram.sinks.qdrant.store import PointFilter, SearchHit, VectorStore

AWAKE: tuple[tuple[str, int], ...] = (("dormant", 1),)


def visibility_filters(viewer: Viewer, layers: Collection[Layer]) -> list[PointFilter]:
    """The ReBAC rule as filters whose union is exactly the visible points."""
    filters: list[PointFilter] = []
    if USER_LAYER in layers:
        filters.append(PointFilter(equals=(("layer", USER_LAYER), ("user_id", viewer.user_id)), not_equals=AWAKE))
    shared = tuple(layer for layer in ordered_layers(layers) if layer in SHARED_LAYERS)
    if shared and viewer.instances != frozenset():
        where: list[tuple[str, tuple[str, ...]]] = [("layer", shared)]
        if viewer.instances is not None:
            where.append(("instance", tuple(sorted(viewer.instances))))
        filters.append(PointFilter(any_of=tuple(where), not_equals=AWAKE))
    return filters


def visible_search(
    store: VectorStore,
    vector: Sequence[float],
    k: int,
    viewer: Viewer,
    layers: Collection[Layer],
    kinds: Collection[str] | None = None,
) -> list[SearchHit]:
    """The ``k`` points nearest to ``vector`` among those visible to the principal, best first;
    over the collections of ``kinds`` (all collections when None)."""
    collections = sorted({collection_for_kind(kind) for kind in kinds}) if kinds is not None else store.collections()
    hits = [
        hit
        for collection in collections
        for point_filter in visibility_filters(viewer, layers)
        for hit in store.search(collection, vector, k, point_filter)
    ]
    return sorted(hits, key=lambda hit: (-hit.score, hit.id))[:k]
