"""The rows a DreamGraph is made of (processors/dreaming/graph.py): episodes, concepts, the nodes
dreaming made and the active facts, with an episode's JSON row and the chunk that stores it
(processors/dreaming/records.py)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any, Final

from engram.processors.retrieval.access import due
from engram.processors.retrieval.storage import one_layer
from engram.schemas.records import EventRef, Layer, MemoryEvent, NodeUpserted

CHUNK_EPISODES: Final = 64
Said = tuple[str, int, int, str, str, str, Layer, list[EventRef]]  # Episode.said


@dataclass(slots=True)
class Episode:
    node_id: str
    session_id: str
    turn_index: int
    time_ms: int
    role: str
    turn_id: str
    text: str
    layer: Layer
    sources: list[EventRef]
    concepts: set[str] = field(default_factory=set)
    dormant: bool = False
    chained: bool = False
    arrival: int = 0  # how many episodes the user had before it came
    last_access_ms: int = -1  # the latest recorded use (event time, retrieval/access.py: due); -1: never
    # Its stored row (`episode_row`), kept until a field in it changes (DreamGraph.changed): a chunk is
    # written whole when one of its episodes changes, and rebuilding its other rows cost a tenth of
    # the worker's CPU at 1,000 users.
    row: list[Any] | None = field(default=None, compare=False, repr=False)

    def moved_by(self, at_ms: int) -> bool:
        """Whether an access at ``at_ms`` moves its last access (by ``ACCESS_STEP_MS`` at least: pruning
        ages by days, and moving it per compiled context rewrote the episode's chunk per request)."""
        return due(self.last_access_ms, at_ms)

    @property
    def aged_from_ms(self) -> int:
        """When its age (eq. 15) counts from: its last access when later than its time (use it or
        lose it: seed 001 eq. 3 ages a memory from its last access)."""
        return max(self.time_ms, self.last_access_ms)

    @property
    def chunk(self) -> int:
        """Which part of the user's state holds it (processors/dreaming/records.py)."""
        return chunk_of(self.arrival)

    @property
    def position(self) -> tuple[int, str]:
        """Total order inside the session, the Trace's NEXT order."""
        return (self.turn_index, self.node_id)

    @property
    def said(self) -> Said:
        """What the turn's upsert said of it (`said_of`)."""
        return (self.session_id, self.turn_index, self.time_ms, self.role, self.turn_id, self.text, self.layer,
                self.sources)  # fmt: skip


@dataclass(slots=True)
class Concept:
    node_id: str
    label: str
    committed: bool = False


@dataclass(slots=True)
class Consolidated:
    node_id: str
    kind: str
    text: str
    cites: set[str] = field(default_factory=set)
    anchors: set[str] = field(default_factory=set)
    central: tuple[str, ...] = ()  # a gist's central sentences, as its CENTRAL property names them


@dataclass(slots=True)
class ActiveFact:
    fact_id: str
    subject: str
    relation: str
    value: str
    category: str
    valid_from_ms: int
    turn_ids: list[str]


def episode_row(e: Episode, *, use: bool = True) -> list[Any]:
    """The JSON row; the last access only when there is one (an episode never used keeps its
    13-field row) and ``use`` is asked for (a memory in parts keeps uses apart: records.py). The
    row without the last access is the episode's kept ``row``: a record holding it must not change it."""
    row = e.row
    if row is None:
        sources = [[s["topic"], s["partition"], s["offset"]] for s in e.sources]
        row = e.row = [e.node_id, e.session_id, e.turn_index, e.time_ms, e.role, e.turn_id, e.text, e.layer,
                       sources, sorted(e.concepts), e.dormant, e.chained, e.arrival]  # fmt: skip
    return [*row, e.last_access_ms] if use and e.last_access_ms >= 0 else row


def said_of(event: MemoryEvent, change: NodeUpserted) -> Said:
    """What a turn's upsert says of its episode: session, turn index, time, role, turn id, text,
    layer and sources."""
    props = change["properties"]
    return (sys.intern(str(change["session_id"])), int(props.get("turn_index", "0")), change["event_time_ms"],
            sys.intern(props.get("role", "user")), props.get("turn_id", change["node_id"]), change["text"],
            one_layer(change["layer"]), list(event["sources"]))  # fmt: skip


def episode_of(row: list[Any], arrival: int) -> Episode:
    """An episode row; ``arrival`` for a row written before rows held theirs."""
    node_id, session_id, turn_index, time_ms, role, turn_id, text, layer, sources, concepts, dormant, chained = row[:12]
    refs: list[EventRef] = [EventRef(topic=sys.intern(t), partition=p, offset=o) for t, p, o in sources]
    return Episode(sys.intern(node_id), sys.intern(session_id), turn_index, time_ms, sys.intern(role), turn_id, text,
                   one_layer(layer), refs, {sys.intern(c) for c in concepts}, dormant, chained,
                   int(row[12]) if len(row) > 12 else arrival, int(row[13]) if len(row) > 13 else -1)  # fmt: skip


def chunk_of(arrival: int) -> int:
    """Which chunk holds the episode that arrived ``arrival``-th: `CHUNK_EPISODES` to a chunk."""
    return arrival // CHUNK_EPISODES
