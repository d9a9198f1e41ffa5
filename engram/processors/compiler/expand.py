"""Bounded multi-hop expansion from seed nodes over the MemoryGraph (System 2 and the code path).

Breadth-first, hop by hop, following only the given edge types and only authorized neighbours (the
graph's `neighbours` takes the layers). Per node at most `fanout` neighbours, strongest edge first
(ties by id). Stops at `max_hops`, at `max_nodes_visited`, or at the deadline, and then says the
result is partial: seed 002's safety bounds, where a partial result beats none.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field

from engram.processors.compiler.config import Bounds
from engram.processors.retrieval.types import Neighbour
from engram.processors.slb.neighbourhood import GraphWalk
from engram.schemas.records import Layer


@dataclass(frozen=True, slots=True)
class GraphEdge:
    src: str
    dst: str
    edge_type: str
    weight: float


@dataclass(slots=True)
class Expansion:
    """Visited nodes (seeds first, then by hop), the edges seen between them, and each node's hop."""

    nodes: list[str] = field(default_factory=list)
    edges: list[GraphEdge] = field(default_factory=list)
    hops: dict[str, int] = field(default_factory=dict)
    partial: bool = False
    stop_reason: str | None = None


def expand(
    graph: GraphWalk,
    seeds: Sequence[str],
    layers: Collection[Layer],
    edge_types: Collection[str] | None,
    bounds: Bounds,
    hops: int,
    *,
    deadline: float,
    clock: Callable[[], float],
) -> Expansion:
    out = Expansion()
    for seed in dict.fromkeys(seeds):
        out.nodes.append(seed)
        out.hops[seed] = 0
    frontier = list(out.nodes)
    seen_edges: set[tuple[str, str, str]] = set()
    for hop in range(1, hops + 1):
        following: list[str] = []
        for node in frontier:
            if clock() > deadline:
                out.partial, out.stop_reason = True, f"timeout after {len(out.nodes)} nodes"
                return out
            for nb in _strongest(graph, node, layers, edge_types, bounds.fanout):
                src, dst = (node, nb.node_id) if nb.outgoing else (nb.node_id, node)
                if (src, dst, nb.edge_type) not in seen_edges:
                    seen_edges.add((src, dst, nb.edge_type))
                    out.edges.append(GraphEdge(src, dst, nb.edge_type, nb.weight))
                if nb.node_id in out.hops:
                    continue
                if len(out.nodes) >= bounds.max_nodes_visited:
                    out.partial, out.stop_reason = True, f"max_nodes_visited={bounds.max_nodes_visited}"
                    return out
                out.hops[nb.node_id] = hop
                out.nodes.append(nb.node_id)
                following.append(nb.node_id)
        frontier = following
        if not frontier:
            break
    return out


def _strongest(
    graph: GraphWalk, node: str, layers: Collection[Layer], edge_types: Collection[str] | None, fanout: int
) -> list[Neighbour]:
    ranked = sorted(graph.neighbours(node, layers, edge_types), key=lambda n: (-n.weight, n.node_id, n.edge_type))
    return list(ranked[:fanout])
