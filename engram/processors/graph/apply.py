"""Applying a consolidation report: the MemoryEvents that carry it out, each with its reason.

Consolidation is a dry run by default (processors/graph/maintenance.py). Applied, it changes memory
only through events, so the log stays the truth and a replay reproduces the change:
- a duplicate: the kept node SUPERSEDES it (an EdgeUpserted whose properties say why), and the
  duplicate goes dormant (NodeDormant), out of retrieval but restorable, never deleted;
- a contradiction: a CONTRADICTS edge between the two statements, with the reason;
- a promotion: the inference is upserted again as it was last stated, with ``memory_type=fact``
  (the graph then types it Fact) and the reason in its properties; no embedding is re-sent, so a
  vector store keeps the node's point;
- orphans are reported, not changed: dreaming's forgetting decides what is pruned.
Event ids are uuid5 of the change and the request's source reference, so applying the same
request twice writes the same events, which every sink applies once.
"""

from __future__ import annotations

from dataclasses import dataclass

from engram.processors.graph.results import Consolidation
from engram.processors.graph.store import GraphStore
from engram.schemas.events import edge_upserted, memory_event, node_dormant
from engram.schemas.records import (
    EDGE_UPSERTED,
    LAYERS,
    NODE_DORMANT,
    NODE_UPSERTED,
    ChangeRecord,
    EventRef,
    Layer,
    MemoryEvent,
)

APPLIED_BY = "graph.consolidate"


@dataclass(frozen=True, slots=True)
class ApplyContext:
    """Whose memory, when (the request's event time) and from which request (its source ref)."""

    key: str
    time_ms: int
    sources: list[EventRef]


def _layer(store: GraphStore, node_id: str) -> Layer:
    return LAYERS[int(store.layer[store.index[node_id]])]


def consolidation_events(store: GraphStore, report: Consolidation, ctx: ApplyContext) -> list[MemoryEvent]:
    """The events that apply ``report``; nodes the report names must be in ``store``."""
    out: list[MemoryEvent] = []

    def emit(kind: str, change: ChangeRecord) -> None:
        out.append(memory_event(ctx.key, ctx.time_ms, ctx.sources, kind, change))

    for dup in report.duplicates:
        reason = f"duplicate of {dup.keep} (term Jaccard {dup.similarity:.3f})"
        props = {"reason": reason, "by": APPLIED_BY}
        emit(EDGE_UPSERTED, edge_upserted("SUPERSEDES", dup.keep, dup.duplicate, _layer(store, dup.duplicate),
                                          properties=props))  # fmt: skip
        emit(NODE_DORMANT, node_dormant(dup.duplicate, reason))
    for pair in report.contradictions:
        props = {"reason": pair.reason, "by": APPLIED_BY}
        emit(EDGE_UPSERTED, edge_upserted("CONTRADICTS", pair.a, pair.b, _layer(store, pair.a), properties=props))
    for node_id in report.promotions:
        record = store.records.get(store.index[node_id])
        if record is None:
            continue
        reason = "inference held above 0.9 confidence with 3 or more supporters"
        properties = {**record["properties"], "memory_type": "fact", "promoted_by": APPLIED_BY, "reason": reason}
        emit(NODE_UPSERTED, {**record, "properties": properties})
    return out
