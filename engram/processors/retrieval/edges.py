"""The view's edges, indexed by both ends, and how many context edges each node is an end of.

``out[src][edge_id]`` and ``into[dst][edge_id]`` keep arrival order (neighbours are listed in it,
and a node's first-arrived context edge each way is its conversational neighbour). A node that is
an end of no context edge (a concept: its edges are the REF edges of the turns joining it) is
known without reading its edges, so relinking it costs nothing however many members it has.
"""

from __future__ import annotations

from collections.abc import Iterator

from engram.processors.retrieval.storage import Edge


class EdgeTables:
    """See the module docstring. ``contracted``: the ids of dreaming's edges around dormant nodes."""

    def __init__(self, context_type: str) -> None:
        self.context_type = context_type
        self.out: dict[str, dict[str, Edge]] = {}
        self.into: dict[str, dict[str, Edge]] = {}
        self.contracted: set[str] = set()
        self._context_ends: dict[str, int] = {}  # absent: 0

    def __iter__(self) -> Iterator[Edge]:
        return (edge for outgoing in self.out.values() for edge in outgoing.values())

    def has_context(self, node_id: str) -> bool:
        return node_id in self._context_ends

    def add(self, edge: Edge, *, contracted: bool) -> None:
        """Store ``edge`` (an edge with its id again replaces it)."""
        if contracted:
            self.contracted.add(edge.edge_id)
        self._count(self.out.get(edge.src, {}).get(edge.edge_id), -1)
        self.out.setdefault(edge.src, {})[edge.edge_id] = edge
        self.into.setdefault(edge.dst, {})[edge.edge_id] = edge
        self._count(edge, 1)

    def drop(self, src: str, dst: str, edge_id: str) -> Edge | None:
        """Forget an edge; the edge dropped, if there was one."""
        self.contracted.discard(edge_id)
        dropped = self.out.get(src, {}).pop(edge_id, None)
        self.into.get(dst, {}).pop(edge_id, None)
        self._count(dropped, -1)
        return dropped

    def detach(self, node_id: str) -> list[str]:
        """Forget a removed node's edges, both ways; the other end of each (outgoing first)."""
        self._context_ends.pop(node_id, None)
        others: list[str] = []
        for edge in self.out.pop(node_id, {}).values():
            self.into.get(edge.dst, {}).pop(edge.edge_id, None)
            self._count(edge, -1, leaving=node_id)
            others.append(edge.dst)
        for edge in self.into.pop(node_id, {}).values():
            self.out.get(edge.src, {}).pop(edge.edge_id, None)
            self._count(edge, -1, leaving=node_id)
            others.append(edge.src)
        return others

    def _count(self, edge: Edge | None, step: int, leaving: str | None = None) -> None:
        """Count a context edge in (or, ``step`` -1, out of) its ends' tallies; ``leaving``: a
        removed node, whose tally is gone already."""
        if edge is None or edge.edge_type != self.context_type:
            return
        for end in (edge.src, edge.dst) if edge.src != edge.dst else (edge.src,):
            if end == leaving:
                continue
            count = self._context_ends.get(end, 0) + step
            if count:
                self._context_ends[end] = count
            else:
                del self._context_ends[end]
