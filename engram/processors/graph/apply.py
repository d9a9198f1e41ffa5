"""Applying a consolidation report: the MemoryEvents that carry it out, each with its reason.

Consolidation is a dry run by default (processors/graph/maintenance.py). Applied, it changes memory
only through events, so the log stays the truth and a replay reproduces the change:
- a duplicate: the kept node SUPERSEDES it (an EdgeUpserted whose properties say why), and the
  duplicate goes dormant (NodeDormant), out of retrieval but restorable, never deleted. Forgetting's
  two invariants (seed 000 §5.3.1, processors/dreaming/prune.py) hold at once, not at the next dream:
  a duplicate that is the causal parent of an active node stays active (Invariant 2, reported in
  ``held``), and its nearest active neighbours along NEXT are linked by a NEXT edge marked
  ``contracted`` (Invariant 1: NEXT stays one path through the active episodes);
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

import numpy as np
import numpy.typing as npt

from engram.processors.graph.results import Consolidation
from engram.processors.graph.store import GraphStore
from engram.processors.graph.types import EdgeType
from engram.processors.trace.emit import NEXT
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

    asleep: set[int] = set()  # made dormant by this report, before the store applies the events
    for dup in report.duplicates:
        if _causal_children(store, dup.duplicate, asleep):
            continue  # Invariant 2: a causal parent of an active node stays active
        reason = f"duplicate of {dup.keep} (term Jaccard {dup.similarity:.3f})"
        props = {"reason": reason, "by": APPLIED_BY}
        layer = _layer(store, dup.duplicate)
        emit(EDGE_UPSERTED, edge_upserted("SUPERSEDES", dup.keep, dup.duplicate, layer, properties=props))
        emit(NODE_DORMANT, node_dormant(dup.duplicate, reason))
        asleep.add(store.index[dup.duplicate])
        before, after = _active_neighbours(store, dup.duplicate, asleep)
        if before is not None and after is not None:
            contracted = {"contracted": "true", "by": APPLIED_BY}
            emit(EDGE_UPSERTED, edge_upserted(NEXT, before, after, layer, properties=contracted))
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


def _active(store: GraphStore, row: int, asleep: set[int]) -> bool:
    return bool(store.alive[row]) and not bool(store.dormant[row]) and row not in asleep


def _next_edges(store: GraphStore) -> npt.NDArray[np.bool_]:
    n = store.edge_count
    found: npt.NDArray[np.bool_] = (
        store.edge_type.values[:n] == int(EdgeType.TEMPORAL_NEXT)
    ) & store.edge_alive.values[:n]
    return found


def _causal_children(store: GraphStore, node_id: str, asleep: set[int]) -> list[int]:
    """Active nodes ``node_id`` caused (CAUSAL cause -> effect is stored as CAUSED_BY effect -> cause)."""
    n, row = store.edge_count, store.index[node_id]
    caused = (store.edge_type.values[:n] == int(EdgeType.CAUSED_BY)) & store.edge_alive.values[:n]
    effects = store.src.values[:n][caused & (store.dst.values[:n] == row)]
    return [int(e) for e in effects if _active(store, int(e), asleep)]


def _active_neighbours(store: GraphStore, node_id: str, asleep: set[int]) -> tuple[str | None, str | None]:
    """The nearest active episodes before and after ``node_id`` along NEXT, over dormant ones."""
    nexts = _next_edges(store)
    src, dst = store.src.values[: len(nexts)][nexts], store.dst.values[: len(nexts)][nexts]
    before = dict(zip(dst.tolist(), src.tolist(), strict=True))
    after = dict(zip(src.tolist(), dst.tolist(), strict=True))
    found: list[str | None] = []
    for step in (before, after):
        row, seen = store.index[node_id], set()
        while row in step and row not in seen:
            seen.add(row)
            row = step[row]
            if _active(store, row, asleep):
                break
        found.append(store.ids[row] if row != store.index[node_id] and _active(store, row, asleep) else None)
    return found[0], found[1]
