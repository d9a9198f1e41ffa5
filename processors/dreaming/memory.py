"""UserMemory: what the dream step keeps per user, and the echoes it is waiting for.

``graph`` is the user's DreamGraph and ``toc`` the time hierarchy (processors/toc), both folded
from the user's engram.memory events. ``pending`` holds the ids of the events dreaming emitted and
applied directly that have not come back through the topic yet: when one comes back it is skipped,
so an old event can never undo a newer change (the graph is the fold of the other writers' events
plus dreaming's own, each applied once, in the order dreaming decided them).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from processors.dreaming.graph import DreamGraph
from processors.toc import TocIndex
from processors.trace.emit import EVENT_KIND
from schemas.changes import change_as
from schemas.records import MemoryEvent, NodeUpserted


@dataclass(slots=True)
class UserMemory:
    graph: DreamGraph
    toc: TocIndex
    pending: set[str] = field(default_factory=set)
    changed: bool = False

    @staticmethod
    def new(user_id: str) -> UserMemory:
        return UserMemory(DreamGraph(user_id), TocIndex(user_id))

    @property
    def user_id(self) -> str:
        return self.graph.user_id

    def fold(self, event: MemoryEvent) -> bool:
        """Apply another writer's event; False (and nothing applied) for an echo of dreaming's own."""
        self.changed = True
        if event["event_id"] in self.pending:
            self.pending.discard(event["event_id"])
            return False
        self.graph.apply([event])
        node = change_as(event, NodeUpserted)
        if node is not None and node["kind"] == EVENT_KIND and node["session_id"] is not None:
            self.toc.add(node["node_id"], node["event_time_ms"], node["session_id"])
        return True

    def emitted(self, events: Iterable[MemoryEvent]) -> None:
        """Dreaming applied these itself: their echoes will be skipped."""
        self.pending.update(e["event_id"] for e in events)
        self.changed = True

    def to_dict(self) -> dict[str, Any]:
        return {"graph": self.graph.to_dict(), "toc": self.toc.to_dict(), "pending": sorted(self.pending)}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> UserMemory:
        return UserMemory(
            DreamGraph.from_dict(data["graph"]), TocIndex.from_dict(data["toc"]), {str(i) for i in data["pending"]}
        )
