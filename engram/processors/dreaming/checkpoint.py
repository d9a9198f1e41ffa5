"""What a dream changed of a user's memory, journaled as it goes and put back if the dream fails.

A dream's events only ever change these parts of the DreamGraph: consolidated nodes (text, central
sentences, cites, anchors), concepts' committed flag, rejected candidates, episodes' dormant and
chained flags, and the NEXT edges (with those dreaming contracted, and their index by source); and
the TOC's changed periods and unpublished edges it takes. A dream removes nothing. While a
``Checkpoint`` is open, the graph shows each event to its ``Journal`` before applying it, and the
journal keeps the first state each of those parts had in the dream: so saving costs what the dream
touches, not what the memory holds (copying every consolidated node's cites and every episode's
flags each dream grew with the history).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from engram.processors.dreaming.graph import ABOUT, CITES, CONSOLIDATES, DREAM_KINDS, DreamGraph
from engram.processors.dreaming.made import CONTRACTED_ITEM, NODE_ITEM, REJECTED_ITEM, made_key
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.rows import Consolidated
from engram.processors.trace.emit import NEXT
from engram.schemas.changes import ChangeHandler
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeUpserted,
    RuleRejected,
)

Edge = tuple[str, str]


@dataclass(slots=True)
class Journal(ChangeHandler):
    """The state of each part of ``graph`` an event is about to change, as it was before the first."""

    graph: DreamGraph
    consolidated: dict[str, Consolidated | None] = field(default_factory=dict)
    committed: dict[str, bool] = field(default_factory=dict)  # concept -> its committed flag
    rejected: dict[str, set[str] | None] = field(default_factory=dict)  # a rejection replaces its set
    flags: dict[str, tuple[bool, bool]] = field(default_factory=dict)  # episode -> (dormant, chained)
    edges: dict[Edge, tuple[bool, bool]] = field(default_factory=dict)  # NEXT edge -> (held, contracted)

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        if change["kind"] in DREAM_KINDS:
            self._consolidated(change["node_id"])

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted | EdgeRemoved) -> None:
        kind, src, dst = change["edge_type"], change["src"], change["dst"]
        if kind == NEXT:
            edge = (src, dst)
            self.edges.setdefault(edge, (edge in self.graph.next_edges, edge in self.graph.contracted))
            for node_id in (src, dst):
                self._flags(node_id)
        elif kind in (CONSOLIDATES, CITES, ABOUT):
            self._consolidated(src)
            if kind == CONSOLIDATES and (concept := self.graph.concepts.get(dst)) is not None:
                self.committed.setdefault(dst, concept.committed)

    edge_removed = edge_upserted

    def node_dormant(self, event: MemoryEvent, change: NodeDormant | NodeReawakened) -> None:
        self._flags(change["node_id"])

    node_reawakened = node_dormant

    def rule_rejected(self, event: MemoryEvent, change: RuleRejected) -> None:
        self.rejected.setdefault(change["rule_id"], self.graph.rejected.get(change["rule_id"]))

    def _consolidated(self, node_id: str) -> None:
        if node_id not in self.consolidated:
            known = self.graph.consolidated.get(node_id)
            saved = None if known is None else replace(known, cites=set(known.cites), anchors=set(known.anchors))
            self.consolidated[node_id] = saved

    def _flags(self, node_id: str) -> None:
        if node_id not in self.flags and (episode := self.graph.episodes.get(node_id)) is not None:
            self.flags[node_id] = (episode.dormant, episode.chained)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    journal: Journal
    toc_changed: set[str]
    toc_unpublished: dict[str, set[str]]
    toc_published: int

    @staticmethod
    def of(memory: UserMemory) -> Checkpoint:
        """Start journaling the memory's graph (until ``close``)."""
        journal = memory.graph.journal = Journal(memory.graph)
        toc = memory.toc
        return Checkpoint(journal, set(toc.changed), {k: set(v) for k, v in toc.unpublished.items()}, toc.published)

    def close(self, memory: UserMemory) -> None:
        memory.graph.journal = None

    def restore(self, memory: UserMemory) -> None:
        """Every part the dream changed, as it was before the dream."""
        graph, journal = memory.graph, self.journal
        for node_id, node in journal.consolidated.items():
            _cites_put_back(graph, node_id, set() if node is None else node.cites)
            if node is None:
                graph.consolidated.pop(node_id, None)
            else:
                graph.consolidated[node_id] = node
            _made(graph, made_key(NODE_ITEM, node_id), node is not None)
        for concept_id, committed in journal.committed.items():
            graph.concepts[concept_id].committed = committed
            graph.concept_chunks.touch(concept_id)
        for rule_id, support in journal.rejected.items():
            if support is None:
                graph.rejected.pop(rule_id, None)
            else:
                graph.rejected[rule_id] = support
            _made(graph, made_key(REJECTED_ITEM, rule_id), support is not None)
        for node_id, (dormant, chained) in journal.flags.items():
            episode = graph.episodes[node_id]
            episode.dormant, episode.chained = dormant, chained
            episode.row = None
        for edge, held in journal.edges.items():
            _put_back(graph, edge, *held)
        memory.toc.changed, memory.toc.unpublished = self.toc_changed, self.toc_unpublished
        memory.toc.published = self.toc_published
        graph.eligibility.invalidate()  # the flags were put back outside the fold


def _put_back(graph: DreamGraph, edge: Edge, held: bool, contracted: bool) -> None:
    src, dst = edge
    if held:
        graph.next_edges.add(edge)
        graph.next_out.setdefault(src, set()).add(dst)
        graph.note_source(src)
    else:
        graph.next_edges.discard(edge)
        graph.next_out.get(src, set()).discard(dst)
    if contracted:
        graph.contracted.add(edge)
    else:
        graph.contracted.discard(edge)
    _made(graph, made_key(CONTRACTED_ITEM, src, dst), contracted)


def _cites_put_back(graph: DreamGraph, node_id: str, cites: set[str]) -> None:
    """The chunks of citations (made.CitedChunks) after a node's citations were put back to ``cites``
    (a dream only adds citations: those it added are taken out)."""
    known = graph.consolidated.get(node_id)
    now = set() if known is None else known.cites
    graph.cited.drop({(node_id, cited) for cited in now - cites})
    for cited in sorted(cites - now):
        graph.cited.add((node_id, cited))


def _made(graph: DreamGraph, item: str, held: bool) -> None:
    """What dreaming made, by chunk (made.py), after an item was put back (or taken out)."""
    if held:
        graph.made.touch(item)
    else:
        graph.made.discard(item)
