"""Ids of code entities (uuid5 via ``schemas.events.stable_id``); edges use ``schemas.events.edge_upserted``."""

from __future__ import annotations

import functools

from engram.schemas.events import stable_id


@functools.lru_cache(maxsize=1 << 17)
def entity_id(repo: str, qualname: str, kind: str) -> str:
    """The node id of a code entity: uuid5(repo, qualname, kind), stable across edits."""
    return stable_id(repo, qualname, kind)
