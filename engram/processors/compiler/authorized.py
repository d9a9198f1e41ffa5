"""Traversal restricted to what the principal may see (seed 000 §4.3: restrict before traversal).

`MemoryGraph.neighbours` filters by layer but knows no viewer, so on a store that holds several
users and tenants it would walk from a shared node into another user's USER-layer node, or into
an instance the principal does not read. `AuthorizedGraph`
wraps a graph for one request and drops such neighbours *before* they are visited, scored or
ranked. Searches pass through: they already take the user and the layers. `node` passes through
too, so the compiler's final defensive check still sees what a broken store hands out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol, runtime_checkable

from engram.processors.rebac import Viewer, is_visible
from engram.processors.retrieval.types import MemoryGraph, Neighbour, NodeRecord
from engram.schemas.records import Layer


@runtime_checkable
class EdgesAmong(Protocol):
    """A graph that lists the edges among a set of nodes in one call (the retrieval MemoryView)."""

    def edges_among(
        self, node_ids: Collection[str], layers: Collection[Layer], edge_types: Collection[str], viewer: Viewer
    ) -> list[tuple[str, str]]: ...


@runtime_checkable
class VisibleNeighbours(Protocol):
    """A graph that filters neighbours for a viewer in the same pass (the retrieval MemoryView)."""

    def visible_neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None, viewer: Viewer | None
    ) -> Sequence[Neighbour]: ...


class AuthorizedGraph:
    def __init__(self, graph: MemoryGraph, viewer: Viewer, layers: frozenset[Layer]) -> None:
        self.graph = graph
        self.viewer = viewer
        self.layers = layers
        self._one_pass = graph if isinstance(graph, VisibleNeighbours) else None

    def node(self, node_id: str) -> NodeRecord | None:
        return self.graph.node(node_id)

    def visible(self, node_id: str) -> bool:
        record = self.graph.node(node_id)
        return record is not None and is_visible(
            record.layer, record.user_id, record.instance, self.viewer, self.layers
        )

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        allowed = self.layers.intersection(layers)
        if self._one_pass is not None:
            return self._one_pass.visible_neighbours(node_id, allowed, edge_types, self.viewer)
        return [n for n in self.graph.neighbours(node_id, allowed, edge_types) if self.visible(n.node_id)]

    def edges_among(self, node_ids: Collection[str], edge_types: Collection[str]) -> list[tuple[str, str]]:
        """(src, dst) of the edges of `edge_types` between `node_ids` that `neighbours` shows from
        either end, sorted; one call on a graph that supports it, else a `neighbours` call per node."""
        if isinstance(self.graph, EdgesAmong):
            return self.graph.edges_among(node_ids, self.layers, edge_types, self.viewer)
        present = set(node_ids)
        pairs: set[tuple[str, str]] = set()
        for node_id in present:
            for nb in self.neighbours(node_id, self.layers, edge_types):
                if nb.node_id in present:
                    pairs.add((node_id, nb.node_id) if nb.outgoing else (nb.node_id, node_id))
        return sorted(pairs)
