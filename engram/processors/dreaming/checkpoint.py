"""What a dream may change of a user's memory, saved before it runs and put back if it fails.

A dream's events only ever change these parts of the DreamGraph: consolidated nodes (text, central
sentences, cites, anchors), concepts' committed flag, rejected candidates, episodes' dormant and
chained flags, and the NEXT edges (with those dreaming contracted, and their index by source); and
the TOC's changed periods it takes. Saving them costs a fraction of copying the whole memory (its
episodes' texts, sources and concepts, the causal edges, the facts), which a dream never changes.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from engram.processors.dreaming.graph import Consolidated
from engram.processors.dreaming.memory import UserMemory


@dataclass(frozen=True, slots=True)
class Checkpoint:
    consolidated: dict[str, Consolidated]
    committed: frozenset[str]
    rejected: dict[str, set[str]]
    flags: dict[str, tuple[bool, bool]]  # episode -> (dormant, chained)
    next_edges: set[tuple[str, str]]
    contracted: set[tuple[str, str]]
    toc_changed: set[str]

    @staticmethod
    def of(memory: UserMemory) -> Checkpoint:
        graph = memory.graph
        return Checkpoint(
            {k: replace(n, cites=set(n.cites), anchors=set(n.anchors)) for k, n in graph.consolidated.items()},
            frozenset(graph.committed()),
            dict(graph.rejected),  # a rejection replaces its set, never changes it
            {k: (e.dormant, e.chained) for k, e in graph.episodes.items()},
            set(graph.next_edges),
            set(graph.contracted),
            set(memory.toc.changed),
        )

    def restore(self, memory: UserMemory) -> None:
        graph = memory.graph
        graph.consolidated = self.consolidated
        for concept in graph.concepts.values():
            concept.committed = concept.node_id in self.committed
        graph.rejected = self.rejected
        for node_id, (dormant, chained) in self.flags.items():
            episode = graph.episodes[node_id]
            episode.dormant, episode.chained = dormant, chained
        graph.next_edges, graph.contracted = self.next_edges, self.contracted
        graph.next_out = {}
        for src, dst in self.next_edges:
            graph.next_out.setdefault(src, set()).add(dst)
        memory.toc.changed = self.toc_changed
