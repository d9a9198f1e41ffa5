"""Ids of code entities and edges (uuid5 via ``schemas.events.stable_id``)."""

from __future__ import annotations

import functools

from schemas.events import stable_id
from schemas.records import EdgeUpserted, Layer


@functools.lru_cache(maxsize=1 << 17)
def entity_id(repo: str, qualname: str, kind: str) -> str:
    """The node id of a code entity: uuid5(repo, qualname, kind), stable across edits."""
    return stable_id(repo, qualname, kind)


def code_edge(edge_type: str, src: str, dst: str, layer: Layer) -> EdgeUpserted:
    """``schemas.events.edge_upserted`` with the fast id (same record)."""
    return {
        "edge_id": stable_id("edge", edge_type, src, dst),
        "edge_type": edge_type,
        "src": src,
        "dst": dst,
        "weight": 1.0,
        "layer": layer,
        "properties": {},
    }
