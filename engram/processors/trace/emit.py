"""MemoryEvent constructors for the Trace: one ``TurnEmitter`` collects a turn's events in order.

Order of a turn's events: its node, NEXT changes (removal first), CAUSAL changes, concept nodes and
CHILD_OF edges, then REF edges. All ids derive from content and the turn's EventRef.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.vectors import to_wire
from engram.processors.timeline import date_properties
from engram.processors.trace.atlas import ConceptChange
from engram.schemas.events import edge_removed, edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    NODE_UPSERTED,
    PINNED_KINDS,
    CodeChange,
    ConversationTurn,
    EventRef,
    MemoryEvent,
)

NEXT, CAUSAL, REF, CHILD_OF = "NEXT", "CAUSAL", "REF", "CHILD_OF"
EVENT_KIND, CONCEPT_KIND, CODE_FILE_KIND = "event", "concept", "code_file"


def code_file_node_id(repo: str, path: str) -> str:
    return stable_id("code_file", repo, path)


class TurnEmitter:
    """Builds the MemoryEvents of one turn; ``events`` holds them in emission order."""

    def __init__(self, turn: ConversationTurn, source: EventRef, node_id: str) -> None:
        self.turn = turn
        self.node_id = node_id
        self.key = turn["user_id"]
        self.time = turn["event_time_ms"]
        self.sources = [source]
        self.layer = turn["layer"]
        self.instance = turn.get("instance")
        self.events: list[MemoryEvent] = []

    def node(self, vector: npt.NDArray[np.float32], tokens: int) -> None:
        t = self.turn
        properties = dict(t["metadata"])
        properties.update(role=t["role"], turn_id=t["turn_id"], turn_index=str(t["turn_index"]))
        properties.update(date_properties(t["content"], t["event_time_ms"]))
        if t["tool_calls"]:
            properties["tool_call_ids"] = ",".join(c["call_id"] for c in t["tool_calls"])
        pinned = t["metadata"].get("pinned")
        change = node_upserted(
            self.node_id,
            pinned if pinned in PINNED_KINDS else EVENT_KIND,
            self.layer,
            self.time,
            text=t["content"],
            tokens=tokens,
            user_id=t["user_id"],
            agent_id=t["agent_id"],
            flow_id=t["flow_id"],
            session_id=t["session_id"],
            vector=to_wire(vector),
            properties=properties,
            instance=self.instance,
        )
        self.events.append(memory_event(self.key, self.time, self.sources, NODE_UPSERTED, change))

    def _edge(self, edge_type: str, src: str, dst: str, weight: float = 1.0, reason: str = "") -> None:
        props = {"reason": reason} if reason else None
        change = edge_upserted(edge_type, src, dst, self.layer, weight=weight, properties=props)
        self.events.append(memory_event(self.key, self.time, self.sources, EDGE_UPSERTED, change))

    def _removed(self, edge_type: str, src: str, dst: str, reason: str) -> None:
        change = edge_removed(edge_type, src, dst, reason)
        self.events.append(memory_event(self.key, self.time, self.sources, EDGE_REMOVED, change))

    def next_edges(self, prev: str | None, nxt: str | None) -> None:
        if prev is not None and nxt is not None:
            self._removed(NEXT, prev, nxt, "late-arrival")
        if prev is not None:
            self._edge(NEXT, prev, self.node_id)
        if nxt is not None:
            self._edge(NEXT, self.node_id, nxt)

    def causal(self, cause: str, effect: str, reason: str) -> None:
        self._edge(CAUSAL, cause, effect, reason=reason)

    def causal_removed(self, cause: str, effect: str, reason: str) -> None:
        self._removed(CAUSAL, cause, effect, reason)

    def concepts(self, changes: list[ConceptChange], label_chars: int) -> None:
        label = self.turn["content"][:label_chars]
        for c in changes:
            properties = {"level": str(c.level), "members": str(c.count), "founder": c.founder}
            change = node_upserted(
                c.concept_id,
                CONCEPT_KIND,
                self.layer,
                self.time,
                text=label if c.founded else "",
                user_id=self.key,
                vector=to_wire(c.vector),
                properties=properties,
                instance=self.instance,
            )
            if not c.founded:
                # A refresh carries the new centroid; the label stays the founder's (sinks merge).
                change["properties"]["refresh"] = "true"
            disc = f"members={c.count}"
            self.events.append(memory_event(self.key, self.time, self.sources, NODE_UPSERTED, change, disc))
            if c.founded and c.parent_id is not None:
                self._edge(CHILD_OF, c.concept_id, c.parent_id)

    def refs(self, refs: list[tuple[str, float]]) -> None:
        for concept_id, sim in refs:
            self._edge(REF, self.node_id, concept_id, weight=sim)


def code_file_events(change: CodeChange, source: EventRef, parents: list[str], tokens: int) -> list[MemoryEvent]:
    """The ``code_file`` node of a CodeChange and CAUSAL edges from the turns that caused it."""
    node_id = code_file_node_id(change["repo"], change["path"])
    key, time, sources = change["repo"], change["event_time_ms"], [source]
    properties = {
        "repo": change["repo"],
        "path": change["path"],
        "language": change["language"],
        "commit": change["commit"],
        "change_id": change["change_id"],
        "deleted": "true" if change["deleted"] else "false",
    }
    node = node_upserted(
        node_id,
        CODE_FILE_KIND,
        change["layer"],
        time,
        text=change["path"],
        tokens=tokens,
        user_id=change["user_id"],
        session_id=change["session_id"],
        properties=properties,
        instance=change.get("instance"),
    )
    events = [memory_event(key, time, sources, NODE_UPSERTED, node)]
    for parent in parents:
        edge = edge_upserted(CAUSAL, parent, node_id, change["layer"], properties={"reason": "code-change"})
        events.append(memory_event(key, time, sources, EDGE_UPSERTED, edge))
    return events
