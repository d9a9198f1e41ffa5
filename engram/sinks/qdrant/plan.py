"""Turn a batch of MemoryEvents into the vector writes it implies, coalesced per point id.

Within a batch the last event about a point wins, exactly as if the events were applied one by
one: a NodeRemoved after a NodeUpserted deletes, a NodeUpserted after a NodeRemoved upserts, a
dormancy flag rides on a pending upsert or becomes a payload update of a stored point. Applying
deletes, then upserts, then flag updates is then order-free, which keeps a replayed or retried
batch idempotent.

A NodeUpserted carries the node's whole state, so it replaces the point including its payload
(``dormant`` goes back to 0). Nodes without an embedding have no point; they live in the
graph only.

A SubjectErased is a barrier, not a write to coalesce: it closes the writes planned so far and
opens a new group (`VectorBatchPlan.erasures`). The sink applies the groups in batch order with
each erasure between them, so the user's points written before the erasure are deleted by it and
those written after it (a returning user) survive, and a replay re-runs the same sequence.
Coalescing never crosses a barrier, which keeps a group's order-free argument above intact.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from engram.processors.embedding.vectors import node_vector
from engram.processors.rebac import node_instance
from engram.schemas.changes import change_as
from engram.schemas.records import (
    EventRef,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodeUpserted,
    SubjectErased,
)
from engram.sinks.qdrant.store import VectorPoint

DEFAULT_PREFIX: Final = "engram_"
_NOT_NAME_CHARS: Final = re.compile(r"[^a-z0-9_]+")


def collection_for_kind(kind: str, prefix: str = DEFAULT_PREFIX) -> str:
    """``engram_<kind>``: lowercased, anything outside ``[a-z0-9_]`` folded to ``_``, 63 chars max."""
    slug = _NOT_NAME_CHARS.sub("_", kind.lower()).strip("_") or "node"
    return f"{prefix}{slug}"[:63]


def point_payload(node: NodeUpserted, sources: Iterable[EventRef]) -> dict[str, object]:
    """The payload of a node's point: tenant, layer and instance, kind, time, tokens, text, provenance."""
    return {
        "user_id": node["user_id"],
        "instance": node_instance(node["layer"], node["user_id"], node.get("instance")),
        "agent_id": node["agent_id"],
        "flow_id": node["flow_id"],
        "session_id": node["session_id"],
        "layer": node["layer"],
        "kind": node["kind"],
        "event_time_ms": node["event_time_ms"],
        "tokens": node["tokens"],
        "text": node["text"],
        "properties": dict(sorted(node["properties"].items())),
        "sources": [{"topic": s["topic"], "partition": s["partition"], "offset": s["offset"]} for s in sources],
        "dormant": 0,
    }


@dataclass(slots=True)
class VectorWrites:
    """Coalesced writes of one stretch of a batch: per collection upserts and deletes; dormancy
    flags of stored points."""

    upserts: dict[str, dict[str, VectorPoint]] = field(default_factory=dict)
    deletes: dict[str, set[str]] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)

    def _pending_upsert(self, node_id: str) -> tuple[str, VectorPoint] | None:
        for collection, points in self.upserts.items():
            if node_id in points:
                return collection, points[node_id]
        return None

    def upsert(self, collection: str, point: VectorPoint) -> None:
        for other, points in self.upserts.items():
            if other != collection:
                points.pop(point.id, None)
        self.deletes.get(collection, set()).discard(point.id)
        self.flags.pop(point.id, None)
        self.upserts.setdefault(collection, {})[point.id] = point

    def remove(self, collection: str, node_id: str) -> None:
        for points in self.upserts.values():
            points.pop(node_id, None)
        self.flags.pop(node_id, None)
        self.deletes.setdefault(collection, set()).add(node_id)

    def flag(self, node_id: str, dormant: bool) -> None:
        pending = self._pending_upsert(node_id)
        if pending is not None:
            collection, point = pending
            payload = {**point.payload, "dormant": int(dormant)}
            self.upserts[collection][node_id] = VectorPoint(point.id, point.vector, payload)
            return
        if any(node_id in ids for ids in self.deletes.values()):
            return  # removed earlier in this batch: nothing left to flag
        self.flags[node_id] = dormant

    def writes_nothing(self) -> bool:
        return not (any(self.upserts.values()) or any(self.deletes.values()) or self.flags)

    @property
    def empty(self) -> bool:
        return self.writes_nothing()


@dataclass(frozen=True, slots=True)
class VectorErasure:
    """A SubjectErased inside a batch: delete every point of ``user_id`` in every collection,
    then apply ``then``, the writes planned after it (up to the next erasure)."""

    user_id: str
    then: VectorWrites


@dataclass(slots=True)
class VectorBatchPlan(VectorWrites):
    """One batch: its own writes are those planned before the first SubjectErased (all of them
    when there is none); ``erasures`` follow in batch order. ``skipped`` counts the events of the
    whole batch that write nothing here."""

    erasures: list[VectorErasure] = field(default_factory=list)
    skipped: int = 0

    @property
    def current(self) -> VectorWrites:
        """The group that the next event folds into: the one after the last erasure."""
        return self.erasures[-1].then if self.erasures else self

    def erase(self, user_id: str) -> None:
        """Close the writes planned so far; the next events fold into a new group."""
        self.erasures.append(VectorErasure(user_id, VectorWrites()))

    @property
    def empty(self) -> bool:
        return not self.erasures and self.writes_nothing()


def plan_batch(events: Iterable[MemoryEvent], prefix: str = DEFAULT_PREFIX) -> VectorBatchPlan:
    """Fold the events, in order, into one `VectorBatchPlan`. Other change kinds (unknown ones
    included) and nodes without an embedding count as ``skipped``."""
    plan = VectorBatchPlan()
    for event in events:
        writes = plan.current
        if (node := change_as(event, NodeUpserted)) is not None:
            vector = node_vector(node)
            if vector is None or not vector.size:
                plan.skipped += 1
                continue
            point = VectorPoint(node["node_id"], vector.tolist(), point_payload(node, event["sources"]))
            writes.upsert(collection_for_kind(node["kind"], prefix), point)
        elif (removed := change_as(event, NodeRemoved)) is not None:
            writes.remove(collection_for_kind(removed["kind"], prefix), removed["node_id"])
        elif (dormant := change_as(event, NodeDormant)) is not None:
            writes.flag(dormant["node_id"], dormant=True)
        elif (awake := change_as(event, NodeReawakened)) is not None:
            writes.flag(awake["node_id"], dormant=False)
        elif (erased := change_as(event, SubjectErased)) is not None:
            plan.erase(erased["user_id"])
        else:
            plan.skipped += 1
    return plan
