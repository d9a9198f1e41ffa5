"""Seed 004's typed memory graph, mapped onto Engram's kinds.

AgenticMemory types every node as one of six cognitive event types and every edge as one of
seven relations. Engram's MemoryEvents carry their own kinds; the graph engine maps them here,
once, so every query speaks the seed's vocabulary.

Node types (``NodeType``), from the kind of a NodeUpserted or the shape of a FactDecided:

| seed type  | Engram                                                                          |
|------------|---------------------------------------------------------------------------------|
| Episode    | ``event`` (a conversation turn), ``toc`` (a time-hierarchy summary of turns)    |
| Fact       | a fact the rules stored (FactDecided ``store``), any category but ``task``      |
| Decision   | a fact of category ``task``: something the user committed to do                 |
| Correction | a fact that replaced another (FactDecided with ``supersedes``)                  |
| Inference  | dreaming's products: ``concept``, ``gist``, ``profile``, ``rule``               |
| Skill      | the Code Brain's nodes (``code_*``): procedural knowledge                       |

A node's ``memory_type`` property overrides the mapping (consolidation's inference promotion
writes ``memory_type=fact``). Unknown kinds are Episodes: something that was observed.

Edge types (``EdgeType``), from an EdgeUpserted's type; "reversed" means the seed's edge runs
the other way round from Engram's:

| seed type     | Engram                                                                     |
|---------------|----------------------------------------------------------------------------|
| TEMPORAL_NEXT | ``NEXT``                                                                   |
| CAUSED_BY     | ``CAUSAL`` reversed: Engram's runs cause → effect, the seed's effect → cause |
| SUPPORTS      | ``SUPPORTS``, ``EVIDENCED_BY`` reversed; and derived: each source turn of a |
|               | fact SUPPORTS the fact, each evidence node SUPPORTS the rule dreamt from it |
| CONTRADICTS   | ``CONTRADICTS``; derived: the turn that made the rules retract a fact       |
|               | CONTRADICTS that fact                                                      |
| SUPERSEDES    | ``SUPERSEDES``; derived: a replacing fact SUPERSEDES the fact it replaced   |
| PART_OF       | ``CHILD_OF``, ``DEFINES`` reversed, ``CONTAINS`` reversed, ``CONSOLIDATES`` |
|               | reversed (an episode is PART_OF the concept that consolidated it)          |
| RELATED_TO    | ``REF``, ``MENTIONS``, ``ABOUT``, ``CALLS``, ``IMPORTS`` and any other type |

Direction conventions the queries rely on: SUPPORTS runs evidence → conclusion (the destination
depends on the source); CAUSED_BY runs effect → cause (the source depends on the destination).
Belief revision follows both from what is retracted to what depended on it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from engram.processors.rebac import Viewer, authorized_layers, is_visible
from engram.schemas.records import LAYERS, Layer


class NodeType(IntEnum):
    FACT = 0
    DECISION = 1
    INFERENCE = 2
    CORRECTION = 3
    SKILL = 4
    EPISODE = 5


class EdgeType(IntEnum):
    CAUSED_BY = 0
    SUPPORTS = 1
    CONTRADICTS = 2
    SUPERSEDES = 3
    RELATED_TO = 4
    PART_OF = 5
    TEMPORAL_NEXT = 6


# The query types the engine answers (processors/graph/engine.py), here so that intake and the CLI
# can check a request's type without importing the engine and its numerical libraries.
QUERY_TYPES: Final[tuple[str, ...]] = (
    "traversal", "pattern", "temporal", "similarity", "resolve",
    "bm25", "hybrid", "pagerank", "degree", "betweenness",
    "bfs", "dijkstra", "revise", "gaps", "analogy", "consolidate", "drift",
)  # fmt: skip
NODE_TYPE_NAMES: Final[tuple[str, ...]] = tuple(t.name.lower() for t in NodeType)
EDGE_TYPE_NAMES: Final[tuple[str, ...]] = tuple(t.name for t in EdgeType)

_KIND_TYPES: Final[dict[str, NodeType]] = {
    "event": NodeType.EPISODE,
    "toc": NodeType.EPISODE,
    "concept": NodeType.INFERENCE,
    "gist": NodeType.INFERENCE,
    "profile": NodeType.INFERENCE,
    "rule": NodeType.INFERENCE,
    "fact": NodeType.FACT,
}
# (seed type, reversed) per Engram edge type; anything else is RELATED_TO as written.
_EDGE_TYPES: Final[dict[str, tuple[EdgeType, bool]]] = {
    "NEXT": (EdgeType.TEMPORAL_NEXT, False),
    "CAUSAL": (EdgeType.CAUSED_BY, True),
    "CAUSED_BY": (EdgeType.CAUSED_BY, False),
    "SUPPORTS": (EdgeType.SUPPORTS, False),
    "EVIDENCED_BY": (EdgeType.SUPPORTS, True),
    "CONTRADICTS": (EdgeType.CONTRADICTS, False),
    "SUPERSEDES": (EdgeType.SUPERSEDES, False),
    "CHILD_OF": (EdgeType.PART_OF, False),
    "PART_OF": (EdgeType.PART_OF, False),
    "DEFINES": (EdgeType.PART_OF, True),
    "CONTAINS": (EdgeType.PART_OF, True),
    "CONSOLIDATES": (EdgeType.PART_OF, True),
    "TEMPORAL_NEXT": (EdgeType.TEMPORAL_NEXT, False),
}
# Confidence of a node whose event states none: observations are certain, derivations less so.
DEFAULT_CONFIDENCE: Final[dict[NodeType, float]] = {
    NodeType.EPISODE: 1.0,
    NodeType.SKILL: 1.0,
    NodeType.FACT: 0.8,
    NodeType.DECISION: 0.8,
    NodeType.CORRECTION: 0.8,
    NodeType.INFERENCE: 0.7,
}


class QueryError(ValueError):
    """A graph query that cannot run as asked: an unknown type, node or parameter."""


def node_type_of(kind: str, properties: dict[str, str]) -> NodeType:
    """The seed type of a NodeUpserted (the ``memory_type`` property first)."""
    override = properties.get("memory_type", "")
    if override in NODE_TYPE_NAMES:
        return NodeType(NODE_TYPE_NAMES.index(override))
    if kind.startswith("code_"):
        return NodeType.SKILL
    return _KIND_TYPES.get(kind, NodeType.EPISODE)


def edge_type_of(engram_type: str) -> tuple[EdgeType, bool]:
    """The seed type of an Engram edge type, and whether the seed's edge runs reversed."""
    return _EDGE_TYPES.get(engram_type.upper(), (EdgeType.RELATED_TO, False))


def _parse(names: Iterable[str], known: tuple[str, ...], what: str) -> list[int]:
    """The positions in ``known`` of ``names`` (matched case-insensitively), or a `QueryError`."""
    out = []
    lowered = [k.lower() for k in known]
    for name in names:
        if name.lower() not in lowered:
            msg = f"unknown {what} {name!r}; expected one of {', '.join(known)}"
            raise QueryError(msg)
        out.append(lowered.index(name.lower()))
    return out


def parse_node_types(names: Iterable[str]) -> frozenset[NodeType]:
    return frozenset(NodeType(i) for i in _parse(names, NODE_TYPE_NAMES, "node type"))


def parse_edge_types(names: Iterable[str]) -> frozenset[EdgeType]:
    return frozenset(EdgeType(i) for i in _parse(names, EDGE_TYPE_NAMES, "edge type"))


@dataclass(frozen=True, slots=True)
class Principal:
    """Who asks: a user, the layers they may read and the instances their principal reads
    (``processors.rebac``'s visibility rule; None: an open worker, every instance). Every query
    runs over the nodes this principal may see, and only those."""

    user_id: str
    layers: frozenset[Layer]
    instances: frozenset[str] | None = None

    @property
    def key(self) -> tuple[str, frozenset[Layer], str]:
        return self.user_id, self.layers, self.viewer.key

    @property
    def viewer(self) -> Viewer:
        return Viewer(self.user_id, self.instances)

    def sees(self, layer: str, owner: str | None, instance: str | None) -> bool:
        return is_visible(layer, owner, instance, self.viewer, self.layers)

    @classmethod
    def of(cls, user_id: str, layers: Iterable[str] = LAYERS, instances: Iterable[str] | None = None) -> Principal:
        return cls(user_id, authorized_layers(layers), None if instances is None else frozenset(instances))
