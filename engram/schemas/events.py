"""Deterministic ids and MemoryEvent constructors.

Ids are uuid5 over content and source coordinates, never clocks or randomness, so replaying the
same input yields byte-identical MemoryEvents (ARCHITECTURE.md, "Ordering within a key").
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Iterable, Mapping
from typing import Final

from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_ACCESSED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    NODE_UPSERTED,
    NODES_ACCESSED,
    RULE_COMMITTED,
    RULE_REJECTED,
    SUBJECT_ERASED,
    ChangeRecord,
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    FactAccessed,
    FactDecided,
    Layer,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodesAccessed,
    NodeUpserted,
    RuleCommitted,
    RuleRejected,
)

SCHEMA_VERSION: Final = 1
ENGRAM_NS: Final = uuid.UUID("5b0e7d2a-3c1f-5e8a-9b4d-6f2a1c0e8d73")


_NS_BYTES: Final = ENGRAM_NS.bytes


def stable_id(*parts: object) -> str:
    """uuid5 of the parts joined by an unambiguous separator (RFC 4122 version 5, as a string).

    Computed with hashlib directly: the same string as ``str(uuid.uuid5(ENGRAM_NS, name))`` (a test
    checks it), without building a UUID object. Ids are derived several times per event on the hot path.
    """
    name = "\x1f".join(map(str, parts)).encode("utf-8")
    digest = bytearray(hashlib.sha1(_NS_BYTES + name, usedforsecurity=False).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    h = digest.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def ref_text(sources: Iterable[EventRef]) -> str:
    return ",".join(f"{s['topic']}/{s['partition']}/{s['offset']}" for s in sources)


def _entity_id(kind: str, change: Mapping[str, object]) -> str:
    if kind in (NODE_UPSERTED, NODE_REMOVED, NODE_DORMANT, NODE_REAWAKENED):
        return str(change["node_id"])
    if kind in (EDGE_UPSERTED, EDGE_REMOVED):
        return str(change["edge_id"])
    if kind == FACT_DECIDED:
        return f"{change['fact_id']}:{change['decision']}"
    if kind == FACT_ACCESSED:
        ids = change["fact_ids"]
        return ",".join(str(f) for f in ids) if isinstance(ids, list) else str(ids)
    if kind in (RULE_COMMITTED, RULE_REJECTED):
        return str(change["rule_id"])
    if kind == SUBJECT_ERASED:
        return str(change["user_id"])
    if kind == NODES_ACCESSED:
        return str(change["request_id"])
    msg = f"unknown MemoryEvent change kind {kind!r}"
    raise ValueError(msg)


def memory_event(
    key: str,
    event_time_ms: int,
    sources: list[EventRef],
    kind: str,
    change: ChangeRecord,
    discriminator: str = "",
) -> MemoryEvent:
    """Wrap a change; the event id is uuid5(kind, entity id, discriminator, sources)."""
    event_id = stable_id(kind, _entity_id(kind, change), discriminator, ref_text(sources))
    return {
        "schema_version": SCHEMA_VERSION,
        "event_id": event_id,
        "key": key,
        "event_time_ms": event_time_ms,
        "sources": sources,
        "change": (kind, change),
    }


def node_upserted(
    node_id: str,
    kind: str,
    layer: Layer,
    event_time_ms: int,
    *,
    text: str = "",
    tokens: int = 0,
    user_id: str | None = None,
    agent_id: str | None = None,
    flow_id: str | None = None,
    session_id: str | None = None,
    vector: bytes | None = None,
    properties: dict[str, str] | None = None,
    instance: str | None = None,
) -> NodeUpserted:
    """A node's upsert; ``vector``: its embedding as little-endian float32 bytes."""
    return {
        "node_id": node_id,
        "kind": kind,
        "layer": layer,
        "user_id": user_id,
        "agent_id": agent_id,
        "flow_id": flow_id,
        "session_id": session_id,
        "text": text,
        "tokens": tokens,
        "event_time_ms": event_time_ms,
        "embedding": None,
        "properties": properties or {},
        "instance": instance,
        "vector": vector,
    }


def edge_upserted(
    edge_type: str,
    src: str,
    dst: str,
    layer: Layer,
    *,
    weight: float = 1.0,
    properties: dict[str, str] | None = None,
) -> EdgeUpserted:
    """An edge's id is uuid5(type, src, dst): one edge per (type, src, dst)."""
    return {
        "edge_id": stable_id("edge", edge_type, src, dst),
        "edge_type": edge_type,
        "src": src,
        "dst": dst,
        "weight": weight,
        "layer": layer,
        "properties": properties or {},
    }


def edge_removed(edge_type: str, src: str, dst: str, reason: str) -> EdgeRemoved:
    return {
        "edge_id": stable_id("edge", edge_type, src, dst),
        "edge_type": edge_type,
        "src": src,
        "dst": dst,
        "reason": reason,
    }


def node_removed(node_id: str, kind: str, reason: str) -> NodeRemoved:
    return {"node_id": node_id, "kind": kind, "reason": reason}


def node_dormant(node_id: str, reason: str) -> NodeDormant:
    return {"node_id": node_id, "reason": reason}


def node_reawakened(node_id: str, reason: str) -> NodeReawakened:
    return {"node_id": node_id, "reason": reason}


def fact_accessed(user_id: str, fact_ids: list[str], request_id: str) -> FactAccessed:
    return {"user_id": user_id, "fact_ids": fact_ids, "request_id": request_id}


def nodes_accessed(node_ids: list[str], request_id: str) -> NodesAccessed:
    """The nodes one compiled context held (its event id derives from ``request_id``)."""
    return {"node_ids": node_ids, "request_id": request_id}


def rule_committed(rule_id: str, text: str, reason: str, evidence: list[str]) -> RuleCommitted:
    return {"rule_id": rule_id, "text": text, "reason": reason, "evidence_node_ids": evidence}


def rule_rejected(rule_id: str, text: str, stage: str, reason: str, evidence: list[str]) -> RuleRejected:
    return {"rule_id": rule_id, "text": text, "stage": stage, "reason": reason, "evidence_node_ids": evidence}


__all__ = [
    "ENGRAM_NS",
    "SCHEMA_VERSION",
    "FactDecided",
    "edge_removed",
    "edge_upserted",
    "fact_accessed",
    "memory_event",
    "node_dormant",
    "node_reawakened",
    "nodes_accessed",
    "node_removed",
    "node_upserted",
    "ref_text",
    "rule_committed",
    "rule_rejected",
    "stable_id",
]
