"""MemoryEvent builders for the retrieval tests (no servers, no embedder unless a test asks)."""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.processors.embedding.vectors import to_wire
from engram.processors.retrieval.types import Candidate
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    memory_event,
    node_dormant,
    node_reawakened,
    node_removed,
    node_upserted,
    nodes_accessed,
)
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    NODE_UPSERTED,
    NODES_ACCESSED,
    EventRef,
    FactDecided,
    Layer,
    MemoryEvent,
)

USER = "u-ann"


@dataclass
class Events:
    """Appends MemoryEvents with increasing source offsets."""

    events: list[MemoryEvent] = field(default_factory=list)
    offset: int = 0

    def _ref(self) -> list[EventRef]:
        self.offset += 1
        return [{"topic": "engram.turns", "partition": 0, "offset": self.offset}]

    def node(
        self,
        node_id: str,
        text: str,
        *,
        layer: Layer = "USER",
        user_id: str | None = USER,
        kind: str = "event",
        vector: list[float] | None = None,
        properties: dict[str, str] | None = None,
    ) -> Events:
        wire = None if vector is None else to_wire(vector)
        change = node_upserted(node_id, kind, layer, self.offset, text=text, tokens=len(text.split()),
                               user_id=user_id, session_id="s1", vector=wire, properties=properties)  # fmt: skip
        self.events.append(memory_event(user_id or "shared", self.offset, self._ref(), NODE_UPSERTED, change))
        return self

    def edge(self, edge_type: str, src: str, dst: str, layer: Layer = "USER") -> Events:
        change = edge_upserted(edge_type, src, dst, layer)
        self.events.append(memory_event(USER, self.offset, self._ref(), EDGE_UPSERTED, change))
        return self

    def unedge(self, edge_type: str, src: str, dst: str) -> Events:
        change = edge_removed(edge_type, src, dst, "test")
        self.events.append(memory_event(USER, self.offset, self._ref(), EDGE_REMOVED, change))
        return self

    def remove(self, node_id: str) -> Events:
        change = node_removed(node_id, "event", "t")
        self.events.append(memory_event(USER, self.offset, self._ref(), NODE_REMOVED, change))
        return self

    def dormant(self, node_id: str, *, asleep: bool = True) -> Events:
        if asleep:
            self.events.append(memory_event(USER, self.offset, self._ref(), NODE_DORMANT, node_dormant(node_id, "t")))
        else:
            change = node_reawakened(node_id, "t")
            self.events.append(memory_event(USER, self.offset, self._ref(), NODE_REAWAKENED, change))
        return self

    def accessed(self, *node_ids: str, at_ms: int) -> Events:
        """A compiled context at ``at_ms`` held these nodes (NodesAccessed)."""
        change = nodes_accessed(list(node_ids), f"r{self.offset}")
        self.events.append(memory_event(USER, at_ms, self._ref(), NODES_ACCESSED, change))
        return self

    def fact(self, fact_id: str, subject: str, relation: str, value: str, decision: str = "store",
             supersedes: str | None = None, *, turns: tuple[str, ...] = (),
             category: str = "preference") -> Events:  # fmt: skip
        change: FactDecided = {
            "fact_id": fact_id, "user_id": USER, "scope": "user", "scope_id": USER, "subject": subject,
            "relation": relation, "value": value, "category": category, "confidence": 0.9,
            "decision": decision, "rule": "r", "reason": "test", "horizon": "long", "access_count": 0,
            "valid_from_ms": self.offset, "valid_to_ms": None, "recorded_at_ms": self.offset,
            "supersedes": supersedes, "source_event_ids": list(turns),
        }  # fmt: skip
        self.events.append(memory_event(USER, self.offset, self._ref(), FACT_DECIDED, change))
        return self


def ranking_of(*ids: str) -> list[Candidate]:
    """A hybrid ranking of these nodes, best first (scores 1.0, 0.9, ...)."""
    return [Candidate(node_id, 1.0 - i / 10, "hybrid") for i, node_id in enumerate(ids)]


def ids_of(candidates: list[Candidate]) -> list[str]:
    return [c.node_id for c in candidates]
