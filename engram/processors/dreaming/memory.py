"""UserMemory: what the dream step keeps per user, and the echoes it is waiting for.

``graph`` is the user's DreamGraph and ``toc`` the time hierarchy (processors/toc), both folded
from the user's engram.memory events. ``pending`` holds the ids of the events dreaming emitted and
applied directly that have not come back through the topic yet: when one comes back it is skipped,
so an old event can never undo a newer change (the graph is the fold of the other writers' events
plus dreaming's own, each applied once, in the order dreaming decided them). ``applied`` holds the
last engram.memory offset applied per partition: the state is written before the input's offset is
committed, so after a crash in between, the batch comes again to a memory that already holds it,
and applying it twice would note its turns again. ``dreamt`` is the last dream applied (a user's
dreams come in (time, trigger, session) order): a dream the schedule makes due again, because its
record was not written before the crash, is not dreamt twice.

``echoed`` holds the last ``ECHOES_KEPT`` ids that came back: Kafka delivers at least once, so a
dream's events can reach the topic twice (a worker killed after producing them and before writing
its state dreams the same dream again, with the same ids). The second copy comes back after the
first and must be skipped too: folding it would undo what a later dream changed in between (a
gist's newer text). A copy comes back within the few batches a restart re-runs, far inside the
window kept. Both are kept in chunks by arrival (processors/dreaming/chunks.py), each a part of the
dream table: the window keeps whole chunks, at least its ``ECHOES_KEPT`` latest ids.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from engram.processors.dreaming.chunks import IdChunks
from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.schedule import DueDream
from engram.processors.toc import TocIndex
from engram.processors.trace.emit import EVENT_KIND
from engram.schemas.changes import change_as
from engram.schemas.records import MemoryEvent, NodeRemoved, NodeUpserted

ECHOES_KEPT: Final = 512


@dataclass(slots=True)
class UserMemory:
    graph: DreamGraph
    toc: TocIndex
    pending: IdChunks = field(default_factory=IdChunks)
    applied: dict[int, int] = field(default_factory=dict)
    dreamt: tuple[int, str, str] = (-1, "", "")
    echoed: IdChunks = field(default_factory=IdChunks)  # the latest that came back, at least ECHOES_KEPT
    parts: dict[str, int] = field(default_factory=dict)  # the slot of each stored part (dreaming/records.py)
    stale: set[str] = field(default_factory=set)  # parts whose other slot holds an older copy (processors/parts.py)
    retired: list[str] = field(default_factory=list)  # part keys of an older layout, deleted at the next write
    changed: bool = False

    @staticmethod
    def new(user_id: str) -> UserMemory:
        return UserMemory(DreamGraph(user_id), TocIndex(user_id))

    @property
    def user_id(self) -> str:
        return self.graph.user_id

    def first_time(self, partition: int, offset: int) -> bool:
        """True (and recorded) when engram.memory's ``offset`` of ``partition`` lies past what this
        memory has applied; a user's records of one partition come in offset order."""
        if offset <= self.applied.get(partition, -1):
            return False
        self.applied[partition] = offset
        self.changed = True
        return True

    def first_dream(self, due: DueDream) -> bool:
        """True (and recorded) when ``due`` comes after the last dream applied to this memory."""
        key = (due.at_ms, str(due.trigger), due.session_id)
        if key <= self.dreamt:
            return False
        self.dreamt = key
        self.changed = True
        return True

    def fold(self, event: MemoryEvent) -> bool:
        """Apply another writer's event; False (and nothing applied) for an echo of dreaming's own,
        or for a second copy of a turn the memory holds as it says (delivered again after a crash:
        its session may have been dreamt since, and must not be scheduled again)."""
        self.changed = True
        event_id = event["event_id"]
        if event_id in self.echoed:
            return False  # a second copy of an echo
        if event_id in self.pending:
            self.pending.discard(event_id)
            self.echoed.add(event_id)
            self.echoed.keep_last(ECHOES_KEPT)
            return False
        node = change_as(event, NodeUpserted)
        session = node["session_id"] if node is not None and node["kind"] == EVENT_KIND else None
        if node is not None and session is not None and self.graph.holds_turn(event, node):
            return False
        removed = change_as(event, NodeRemoved)
        if removed is not None and (gone := self.graph.episodes.get(removed["node_id"])) is not None:
            self.toc.remove(gone.node_id, gone.time_ms, gone.session_id)
        self.graph.apply([event])
        if node is not None and session is not None:
            self.toc.add(node["node_id"], node["event_time_ms"], session)
        return True

    def emitted(self, events: Iterable[MemoryEvent]) -> None:
        """Dreaming applied these itself: their echoes will be skipped."""
        for event in events:
            self.pending.add(event["event_id"])
        self.changed = True

    def to_dict(self, *, whole: bool = True) -> dict[str, Any]:
        """The JSON form; without ``whole``, only what is neither the graph, the TOC nor the ids of
        echoes (each of those is kept in parts: processors/dreaming/records.py)."""
        out = {"applied": {str(p): o for p, o in sorted(self.applied.items())}, "dreamt": list(self.dreamt)}
        if not whole:
            return out | {"pending_arrivals": self.pending.arrivals, "echo_arrivals": self.echoed.arrivals}
        echoes = {"pending": sorted(self.pending), "echoed": list(self.echoed)}
        return {"graph": self.graph.to_dict(), "toc": self.toc.to_dict(), **out, **echoes}

    @staticmethod
    def from_dict(data: dict[str, Any], graph: DreamGraph | None = None, toc: TocIndex | None = None) -> UserMemory:
        """From the JSON form; ``graph`` and ``toc``, when given, instead of those it holds."""
        applied = {int(p): int(o) for p, o in data.get("applied", {}).items()}  # absent in older states
        at_ms, trigger, session = data.get("dreamt", (-1, "", ""))  # absent in older states
        graph = graph if graph is not None else DreamGraph.from_dict(data["graph"])
        if toc is None:
            published = int(data["toc"].get("published", 0))
            toc = TocIndex.from_dict(data["toc"], lambda node_id: graph.episodes[node_id].arrival >= published)
        # Absent in a head of version 6 on (its parts hold them), and "echoed" in older states.
        pending = IdChunks.in_order(sorted(str(i) for i in data.get("pending", [])))
        echoed = IdChunks.in_order(str(i) for i in data.get("echoed", []))
        return UserMemory(graph, toc, pending, applied, (int(at_ms), str(trigger), str(session)), echoed)
