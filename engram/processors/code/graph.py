"""An in-memory code graph fed by MemoryEvents, and the CODE route's structural retrieval.

`CodeGraph` is a small adjacency map that applies NodeUpserted / NodeRemoved / EdgeUpserted /
EdgeRemoved events of any node kind (it is a ``ChangeHandler``; other change kinds, unknown ones
included, are ignored). `code_neighbourhood` is the seed's
polymorphic resolution (000 section 4.2.1): from seed entities, go up HAS_METHOD to their classes,
along INHERITS both ways to the whole dispatch family, down HAS_METHOD to the overrides of the same
name, then along CALLS to the services they use; the result is in inheritance order (base first),
each method followed by what it calls. It works on any graph with ``node`` and ``neighbours`` (the
retrieval layer's MemoryGraph has both).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from engram.processors.code.file_graph import CALLS, CLASS, FUNCTION, HAS_METHOD, INHERITS, METHOD, UNRESOLVED
from engram.processors.retrieval.types import Neighbour, NodeRecord
from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.records import (
    LAYERS,
    EdgeRemoved,
    EdgeUpserted,
    Layer,
    MemoryEvent,
    NodeRemoved,
    NodeUpserted,
)

ENTITY_KINDS = frozenset({CLASS, FUNCTION, METHOD})


class CodeGraphView(Protocol):
    def node(self, node_id: str) -> NodeRecord | None: ...

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]: ...


@dataclass(slots=True)
class CodeGraph(ChangeHandler):
    """Nodes and both-way adjacency; removing a node drops its edges."""

    nodes_by_id: dict[str, NodeRecord] = field(default_factory=dict)
    out_edges: dict[str, dict[str, tuple[str, str, float]]] = field(default_factory=dict)  # src -> id -> (type, dst, w)
    in_edges: dict[str, dict[str, tuple[str, str, float]]] = field(default_factory=dict)  # dst -> id -> (type, src, w)

    def apply(self, event: MemoryEvent) -> None:
        dispatch(event, self)

    def apply_all(self, events: Iterable[MemoryEvent]) -> None:
        for event in events:
            self.apply(event)

    def node(self, node_id: str) -> NodeRecord | None:
        return self.nodes_by_id.get(node_id)

    def nodes(self) -> Iterable[NodeRecord]:
        return self.nodes_by_id.values()

    def edge_count(self) -> int:
        return sum(len(v) for v in self.out_edges.values())

    def neighbours(
        self, node_id: str, layers: Collection[Layer] = LAYERS, edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        out: list[Neighbour] = []
        for table, outgoing in ((self.out_edges, True), (self.in_edges, False)):
            for edge_type, other, weight in table.get(node_id, {}).values():
                record = self.nodes_by_id.get(other)
                if (edge_types is None or edge_type in edge_types) and record is not None and record.layer in layers:
                    out.append(Neighbour(other, edge_type, weight, outgoing))
        out.sort(key=lambda n: (n.edge_type, not n.outgoing, n.node_id))
        return out

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        """Provenance is the source of the latest upsert: the change that produced this content."""
        self.nodes_by_id[change["node_id"]] = NodeRecord(
            change["node_id"],
            change["kind"],
            change["layer"],
            change["user_id"],
            change["session_id"],
            change["text"],
            change["tokens"],
            change["event_time_ms"],
            dict(change["properties"]),
            tuple(event["sources"]),
            change.get("instance"),
        )

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        node_id = change["node_id"]
        self.nodes_by_id.pop(node_id, None)
        for edge_id, (_t, dst, _w) in self.out_edges.pop(node_id, {}).items():
            self.in_edges.get(dst, {}).pop(edge_id, None)
        for edge_id, (_t, src, _w) in self.in_edges.pop(node_id, {}).items():
            self.out_edges.get(src, {}).pop(edge_id, None)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        edge_id, edge_type, weight = change["edge_id"], change["edge_type"], change["weight"]
        self.out_edges.setdefault(change["src"], {})[edge_id] = (edge_type, change["dst"], weight)
        self.in_edges.setdefault(change["dst"], {})[edge_id] = (edge_type, change["src"], weight)

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        self.out_edges.get(change["src"], {}).pop(change["edge_id"], None)
        self.in_edges.get(change["dst"], {}).pop(change["edge_id"], None)

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """Ignored, like the known kinds a code graph has no use for."""


# --- the CODE route: seeds by name, then the dispatch family and what it calls ---------------------

_IDENT = re.compile(r"`([^`]+)`|([A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)(\s*\()?")


def code_identifiers(question: str) -> list[str]:
    """Names in a question that look like code: `quoted`, called ``f()``, dotted, snake_case or CamelCase."""
    found: list[str] = []
    for match in _IDENT.finditer(question):
        quoted, word, called = match.group(1), match.group(2), match.group(3)
        name = (quoted or word or "").strip().rstrip("()")
        codeish = bool(quoted or called) or "." in name or "_" in name or re.search(r"[a-z][A-Z]", name) is not None
        if name and codeish and name not in found:
            found.append(name)
    return found


def seed_entities(nodes: Iterable[NodeRecord], question: str) -> list[str]:
    """Ids of classes, functions and methods whose name (or dotted qualname tail) a question names
    exactly; ``authorize`` does not match ``authorize_user``. Sorted by qualname."""
    names = code_identifiers(question)
    seeds: list[tuple[str, str]] = []
    for record in nodes:
        if record.kind not in ENTITY_KINDS:
            continue
        qual = record.properties.get("qualname", "")
        name = record.properties.get("name", "")
        if any(n == name or qual.endswith(f".{n}") for n in names):
            seeds.append((qual, record.node_id))
    return [node_id for _q, node_id in sorted(seeds)]


@dataclass(frozen=True, slots=True)
class CodeNeighbourhood:
    """``node_ids`` in reading order; ``roles`` says why each is there: seed, override, class, callee."""

    node_ids: tuple[str, ...]
    roles: dict[str, str]


def code_neighbourhood(
    graph: CodeGraphView,
    seed_ids: Sequence[str],
    hops: int = 1,
    layers: Collection[Layer] = LAYERS,
    include_classes: bool = False,
) -> CodeNeighbourhood:
    """Seeds, their overrides across the inheritance family, and what those call up to ``hops`` deep.

    Order: the family's classes base first (longest INHERITS path from a root, then qualname); for
    each, its method(s) of the seeds' names, each followed by its callees (and a called method's
    class). Unresolved call targets are left out (they have no code to show).
    """
    roles: dict[str, str] = {}
    names, classes = _seed_names_and_classes(graph, seed_ids, layers, roles)
    family = _family(graph, classes, layers)
    depth = _inheritance_depth(graph, family, layers)
    order: list[str] = []
    for klass in sorted(family, key=lambda c: (depth[c], _qual(graph, c))):
        if include_classes or klass in seed_ids:
            _push(order, roles, klass, "class")
        for method in _methods_named(graph, klass, names, layers):
            _push(order, roles, method, "seed" if method in seed_ids else "override")
            _callees(graph, method, hops, layers, order, roles)
    for seed in seed_ids:  # free functions, and methods of classes outside any family
        if seed not in roles and graph.node(seed) is not None:
            _push(order, roles, seed, "seed")
            _callees(graph, seed, hops, layers, order, roles)
    return CodeNeighbourhood(tuple(order), roles)


def _push(order: list[str], roles: dict[str, str], node_id: str, role: str) -> None:
    if node_id not in roles:
        roles[node_id] = role
        order.append(node_id)


def _qual(graph: CodeGraphView, node_id: str) -> str:
    record = graph.node(node_id)
    return record.properties.get("qualname", node_id) if record else node_id


def _seed_names_and_classes(
    graph: CodeGraphView, seed_ids: Sequence[str], layers: Collection[Layer], roles: dict[str, str]
) -> tuple[set[str], set[str]]:
    names: set[str] = set()
    classes: set[str] = set()
    for seed in seed_ids:
        record = graph.node(seed)
        if record is None:
            continue
        if record.kind == CLASS:
            classes.add(seed)
        elif record.kind == METHOD:
            names.add(record.properties.get("name", ""))
            classes.update(n.node_id for n in graph.neighbours(seed, layers, (HAS_METHOD,)) if not n.outgoing)
    return names, classes


def _family(graph: CodeGraphView, classes: set[str], layers: Collection[Layer], limit: int = 256) -> set[str]:
    """Every class reachable along INHERITS in either direction (bases and subclasses)."""
    family = set(classes)
    frontier = list(classes)
    while frontier and len(family) < limit:
        current = frontier.pop()
        for n in graph.neighbours(current, layers, (INHERITS,)):
            record = graph.node(n.node_id)
            if n.node_id not in family and record is not None and record.kind == CLASS:
                family.add(n.node_id)
                frontier.append(n.node_id)
    return family


def _inheritance_depth(graph: CodeGraphView, family: set[str], layers: Collection[Layer]) -> dict[str, int]:
    depth: dict[str, int] = {}

    def visit(node_id: str, trail: frozenset[str]) -> int:
        if node_id in depth:
            return depth[node_id]
        bases = [
            n.node_id
            for n in graph.neighbours(node_id, layers, (INHERITS,))
            if n.outgoing and n.node_id in family and n.node_id not in trail
        ]
        value = 1 + max((visit(b, trail | {node_id}) for b in bases), default=-1)
        depth[node_id] = value
        return value

    for klass in family:
        visit(klass, frozenset())
    return depth


def _methods_named(graph: CodeGraphView, klass: str, names: set[str], layers: Collection[Layer]) -> list[str]:
    found = []
    for n in graph.neighbours(klass, layers, (HAS_METHOD,)):
        record = graph.node(n.node_id)
        if n.outgoing and record is not None and record.properties.get("name") in names:
            found.append((record.properties.get("qualname", ""), n.node_id))
    return [node_id for _q, node_id in sorted(found)]


def _callees(
    graph: CodeGraphView, start: str, hops: int, layers: Collection[Layer], order: list[str], roles: dict[str, str]
) -> None:
    frontier = [start]
    for _hop in range(hops):
        next_frontier: list[str] = []
        for caller in frontier:
            for n in graph.neighbours(caller, layers, (CALLS,)):
                record = graph.node(n.node_id)
                if not n.outgoing or record is None or record.kind == UNRESOLVED or n.node_id in roles:
                    continue
                if record.kind == METHOD:
                    for owner in graph.neighbours(n.node_id, layers, (HAS_METHOD,)):
                        if not owner.outgoing:
                            _push(order, roles, owner.node_id, "callee")
                _push(order, roles, n.node_id, "callee")
                next_frontier.append(n.node_id)
        frontier = next_frontier
