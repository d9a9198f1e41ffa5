"""Backtracking and provenance over the Trace: an in-memory index built from MemoryEvents.

``TraceIndex.apply`` folds NodeUpserted / NodeRemoved / EdgeUpserted / EdgeRemoved into pointer
maps (it is a ``ChangeHandler``); other change kinds, unknown ones included, are ignored, and so
are the NEXT edges dreaming contracts around dormant turns (``contracted``): a dormant turn keeps
its own edges, and backtracking walks every recorded turn. Queries:
- ``backtrack(node, k)``: the k turns before ``node`` in its session, nearest first, following
  NEXT^-1 one predecessor pointer at a time: O(k).
- ``why(node)``: causal ancestors by breadth-first search over CAUSAL^-1, each with its depth;
  parents are visited in sorted id order, so the answer is deterministic; bounded by depth and size.
- ``episodes(concept)``: the events that REF a concept (REF^-1), ordered by (event time, id).
- ``named(reference)``: the nodes an id people see names (a node id, a source event's
  ``topic/partition/offset``, a producer's turn id).

Every node keeps the EventRefs of the MemoryEvent that last upserted it: its provenance.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    MemoryEvent,
    NodeRemoved,
    NodeUpserted,
)

NEXT, CAUSAL, REF, CHILD_OF = "NEXT", "CAUSAL", "REF", "CHILD_OF"


@dataclass(frozen=True, slots=True)
class TraceNode:
    node_id: str
    kind: str
    text: str
    event_time_ms: int
    session_id: str | None
    properties: dict[str, str]
    sources: tuple[EventRef, ...]


@dataclass(frozen=True, slots=True)
class Ancestor:
    node_id: str
    depth: int
    reason: str


def event_ref(text: str) -> tuple[str, int, int] | None:
    """``topic/partition/offset`` as (topic, partition, offset); None for anything else."""
    topic, _, rest = text.rpartition("/")
    topic, _, partition = topic.rpartition("/")
    if not topic or not partition.isdigit() or not rest.isdigit():
        return None
    return topic, int(partition), int(rest)


@dataclass(slots=True)
class TraceIndex(ChangeHandler):
    nodes: dict[str, TraceNode] = field(default_factory=dict)
    prev: dict[str, str] = field(default_factory=dict)  # NEXT^-1: node -> its predecessor
    next: dict[str, str] = field(default_factory=dict)
    causes: dict[str, dict[str, str]] = field(default_factory=dict)  # effect -> {cause: reason}
    referrers: dict[str, set[str]] = field(default_factory=dict)  # concept -> events that REF it
    children: dict[str, set[str]] = field(default_factory=dict)  # concept -> child concepts

    @classmethod
    def from_events(cls, events: Iterable[MemoryEvent]) -> TraceIndex:
        index = cls()
        index.apply_all(events)
        return index

    def apply_all(self, events: Iterable[MemoryEvent]) -> None:
        for event in events:
            self.apply(event)

    def apply(self, event: MemoryEvent) -> None:
        dispatch(event, self)

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        old = self.nodes.get(change["node_id"])
        text = change["text"] or (old.text if old is not None else "")
        self.nodes[change["node_id"]] = TraceNode(
            change["node_id"],
            change["kind"],
            text,
            change["event_time_ms"],
            change["session_id"],
            dict(change["properties"]),
            tuple(event["sources"]),
        )

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.nodes.pop(change["node_id"], None)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        self._edge(change)

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        self._edge_removed(change)

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """Ignored, like the known kinds the Trace has no use for."""

    def _edge(self, e: EdgeUpserted) -> None:
        src, dst, kind = e["src"], e["dst"], e["edge_type"]
        if kind == NEXT and e["properties"].get("contracted") == "true":
            return  # dreaming's edge around a dormant turn: backtracking walks the whole recorded history
        if kind == NEXT:
            self.prev[dst] = src
            self.next[src] = dst
        elif kind == CAUSAL:
            self.causes.setdefault(dst, {})[src] = e["properties"].get("reason", "")
        elif kind == REF:
            self.referrers.setdefault(dst, set()).add(src)
        elif kind == CHILD_OF:
            self.children.setdefault(dst, set()).add(src)

    def _edge_removed(self, e: EdgeRemoved) -> None:
        src, dst, kind = e["src"], e["dst"], e["edge_type"]
        if kind == NEXT:
            if self.prev.get(dst) == src:
                del self.prev[dst]
            if self.next.get(src) == dst:
                del self.next[src]
        elif kind == CAUSAL:
            self.causes.get(dst, {}).pop(src, None)
        elif kind == REF:
            self.referrers.get(dst, set()).discard(src)
        elif kind == CHILD_OF:
            self.children.get(dst, set()).discard(src)

    def named(self, reference: str) -> list[str]:
        """The nodes a reference people see names, sorted: the node with that id; else the turns
        whose source event is ``topic/partition/offset`` (as a context's provenance shows it), or
        whose producer's turn id it is (``turn_id``; several users' turns may share one)."""
        if reference in self.nodes:
            return [reference]
        source = event_ref(reference)
        return sorted(
            node_id
            for node_id, node in self.nodes.items()
            if "turn_id" in node.properties
            and (
                node.properties["turn_id"] == reference
                or (
                    source is not None
                    and any((r["topic"], r["partition"], r["offset"]) == source for r in node.sources)
                )
            )
        )

    def backtrack(self, node_id: str, k: int) -> list[str]:
        """Up to ``k`` predecessors of ``node_id`` along NEXT^-1, nearest first."""
        out: list[str] = []
        current = node_id
        while len(out) < k:
            before = self.prev.get(current)
            if before is None or before == node_id:
                break
            out.append(before)
            current = before
        return out

    def why(self, node_id: str, max_depth: int = 16, max_nodes: int = 256) -> list[Ancestor]:
        """Causal ancestors (CAUSAL^-1) breadth first; each node once, at its smallest depth."""
        out: list[Ancestor] = []
        seen = {node_id}
        queue: deque[tuple[str, int]] = deque([(node_id, 0)])
        while queue and len(out) < max_nodes:
            current, depth = queue.popleft()
            if depth >= max_depth:
                continue
            parents = self.causes.get(current, {})
            for parent in sorted(parents):
                if parent in seen:
                    continue
                seen.add(parent)
                out.append(Ancestor(parent, depth + 1, parents[parent]))
                queue.append((parent, depth + 1))
                if len(out) >= max_nodes:
                    break
        return out

    def episodes(self, concept_id: str, *, with_children: bool = False) -> list[str]:
        """Events that REF ``concept_id`` (and its Atlas descendants if asked), by (time, id)."""
        members = set(self.referrers.get(concept_id, ()))
        if with_children:
            stack = list(self.children.get(concept_id, ()))
            while stack:
                child = stack.pop()
                members |= self.referrers.get(child, set())
                stack.extend(self.children.get(child, ()))
        return sorted(members, key=self._time_key)

    def _time_key(self, node_id: str) -> tuple[int, str]:
        node = self.nodes.get(node_id)
        return (node.event_time_ms if node is not None else 0, node_id)
