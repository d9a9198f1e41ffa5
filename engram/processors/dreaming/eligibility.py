"""Where each active episode stands under eq. 15, kept as the graph changes, so pruning does not
judge the whole active history on every dream.

Eq. 15 holds an active episode for an uncommitted concept, an outgoing causal edge, or its age
(counted from its last access when it has one: ``Episode.aged_from_ms``). Where an episode stands
changes only when the graph does: a REF or CAUSAL edge, a concept committed (or gone), an episode
placed, accessed, made dormant, re-awakened or removed. ``Eligibility`` sees every event
the graph applies (``DreamGraph.apply``), marks the episodes it may change, and settles them when
a dream asks (``settle``): each active episode's time and its two standing flags, the counts of
each flag, the active episodes by time (the too-recent ones are a bisection) and those neither flag
holds (``free``). A dream's pass then reads the free episodes older than T_decay, which are all
made dormant, so it costs what changed and the free ones of the last T_decay, not the history.

Derived state: not in the JSON form; a new index (a graph read back, or after a failed dream is
undone outside the fold: ``invalidate``) judges every episode at its first ``settle``.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from engram.processors.dreaming.edges import CONSOLIDATES
from engram.processors.trace.emit import CAUSAL, EVENT_KIND, REF
from engram.schemas.changes import ChangeHandler
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodesAccessed,
    NodeUpserted,
)

if TYPE_CHECKING:
    from engram.processors.dreaming.graph import DreamGraph


@dataclass(slots=True)
class Standing:
    time_ms: int  # when its age counts from (Episode.aged_from_ms)
    uncommitted: bool  # REFs a concept that is not committed (or not known)
    causal: bool  # has an outgoing CAUSAL edge


@dataclass(slots=True)
class Eligibility(ChangeHandler):
    active: dict[str, Standing] = field(default_factory=dict)
    by_time: list[tuple[int, str]] = field(default_factory=list)  # the active episodes, (time, id) order
    free: dict[str, None] = field(default_factory=dict)  # active, neither flag holds
    uncommitted: int = 0
    causal: int = 0
    dirty: set[str] = field(default_factory=set)  # episodes to judge again
    dirty_concepts: set[str] = field(default_factory=set)  # concepts whose REFing episodes may be dirty
    committed: set[str] = field(default_factory=set)  # the concepts committed at the last settle
    everything: bool = True  # judge every episode at the next settle

    def invalidate(self) -> None:
        self.everything = True

    # --- what may change an episode's standing -----------------------------------------------

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        # A concept's upsert changes no episode's standing: a new concept is not committed, as a
        # missing one is not, and a refresh (a new centroid, each turn that joins it) keeps its
        # commitment. Judging its members again on each refresh cost O(members) per turn.
        if change["kind"] == EVENT_KIND:
            self.dirty.add(change["node_id"])

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.dirty.add(change["node_id"])
        self.dirty_concepts.add(change["node_id"])

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted | EdgeRemoved) -> None:
        kind = change["edge_type"]
        if kind in (REF, CAUSAL):
            self.dirty.add(change["src"])
        elif kind == CONSOLIDATES:
            self.dirty_concepts.add(change["dst"])

    edge_removed = edge_upserted

    def node_dormant(self, event: MemoryEvent, change: NodeDormant | NodeReawakened) -> None:
        self.dirty.add(change["node_id"])

    node_reawakened = node_dormant

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        self.dirty.update(change["node_ids"])  # ids that are not episodes are judged as nothing

    # --- judged when a dream asks ----------------------------------------------------------

    def settle(self, graph: DreamGraph) -> None:
        """Judge again every episode marked since the last call (every one, the first time), and
        the episodes REFing a marked concept whose commitment changed since the last call (a gist
        consolidating an already committed concept changes none of them)."""
        if self.everything:  # every episode judged once, then ordered by time once
            self.active, self.by_time, self.free = {}, [], {}
            self.uncommitted = self.causal = 0
            self.committed = graph.committed()
            for node_id in graph.episodes:
                self._judge(graph, node_id, self.by_time.append)
            self.by_time.sort()
            self.dirty.clear()
            self.everything = False
        members, concepts = graph.index.by_concept, graph.concepts
        for concept in self.dirty_concepts:
            now = concept in concepts and concepts[concept].committed
            if now != (concept in self.committed):
                (self.committed.add if now else self.committed.discard)(concept)
                self.dirty.update(members.get(concept, ()))
        for node_id in sorted(self.dirty):  # sorted: the same ``free`` order however marked
            self._judge(graph, node_id)
        self.dirty.clear()
        self.dirty_concepts.clear()

    def too_recent(self, recent_from_ms: int) -> int:
        """Active episodes at or after ``recent_from_ms``."""
        return len(self.by_time) - bisect.bisect_left(self.by_time, (recent_from_ms, ""))

    def _judge(self, graph: DreamGraph, node_id: str, place: Callable[[tuple[int, str]], None] | None = None) -> None:
        """Where ``node_id`` stands now; ``place`` puts it in ``by_time`` (default: in order). A
        standing judged the same as before is left in place: moving it in ``by_time`` costs O(active
        episodes), and the members of a committed concept are judged again, mostly unchanged."""
        old = self.active.get(node_id)
        episode = graph.episodes.get(node_id)
        if episode is None or episode.dormant:
            if old is not None:
                self._drop(node_id, old)
            return
        concepts = graph.concepts
        uncommitted = not all(c in concepts and concepts[c].committed for c in episode.concepts)
        standing = Standing(episode.aged_from_ms, uncommitted, bool(graph.causal_out.get(node_id)))
        if standing == old:
            return
        if old is not None:
            self._drop(node_id, old)
        self.active[node_id] = standing
        (place or partial(bisect.insort, self.by_time))((standing.time_ms, node_id))
        self.uncommitted += standing.uncommitted
        self.causal += standing.causal
        if not (standing.uncommitted or standing.causal):
            self.free[node_id] = None

    def _drop(self, node_id: str, old: Standing) -> None:
        del self.active[node_id]
        del self.by_time[bisect.bisect_left(self.by_time, (old.time_ms, node_id))]
        self.uncommitted -= old.uncommitted
        self.causal -= old.causal
        self.free.pop(node_id, None)
