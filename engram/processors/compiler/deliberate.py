"""System 2 over the graph store: the protocol the compiler calls, and how its answer joins a request.

The hot path stays in process (ARCHITECTURE.md, "State"): seeds come from the in-process hybrid
search. A deliberate route (THEMATIC, RESEARCH) then expands from those seeds with a Cypher
multi-hop over the graph store, where every node on every path satisfies the ReBAC rule in the
``WHERE`` clause. The store is the authoritative graph: it also holds what this worker's view may
not (shared-layer nodes keyed by a repository live on that repository's partition).

When the store fails or answers too slowly, the compiler expands in process instead and says so
in ``fallbacks`` (seed 002's chain: a partial or local result beats none). How long "too slowly" is
comes from the request's budget; the waiting itself happens in the adapter (sinks/deadline.py), so
this module and the compiler stay pure.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

from engram.processors.compiler.expand import Expansion, GraphEdge
from engram.processors.rebac import Viewer
from engram.processors.retrieval.types import NodeRecord
from engram.schemas.records import Layer


class StoreUnavailableError(RuntimeError):
    """The graph store could not answer a deliberate expansion (down, timed out, rejected)."""


class StoreTimeoutError(StoreUnavailableError):
    """The graph store did not answer within the request's budget (``waited_ms``, in ms)."""

    def __init__(self, waited_ms: float) -> None:
        super().__init__(f"timed out after {waited_ms:.0f} ms")
        self.waited_ms = waited_ms


@dataclass(frozen=True, slots=True)
class StoreExpansion:
    """Nodes found within the hops (seeds excluded), each node's hop count, and the edges among
    the seeds and the found nodes (of the requested types)."""

    records: tuple[NodeRecord, ...]
    hops: dict[str, int]
    edges: tuple[GraphEdge, ...]


class GraphStoreExpander(Protocol):
    def expand(
        self,
        seeds: Sequence[str],
        viewer: Viewer,
        layers: Collection[Layer],
        edge_types: Sequence[str],
        hops: int,
        limit: int,
    ) -> StoreExpansion:
        """Nodes within ``hops`` of ``seeds`` over ``edge_types``, every path node visible to
        (``viewer``, ``layers``), nearest first, at most ``limit``. Raises `StoreUnavailableError`."""
        ...


def joined(seeds: Sequence[str], found: StoreExpansion, limit: int) -> Expansion:
    """The store's answer as an `Expansion`: seeds first, then the found nodes nearest first; partial
    when the store returned ``limit`` nodes (there may be more)."""
    out = Expansion()
    for seed in dict.fromkeys(seeds):
        out.nodes.append(seed)
        out.hops[seed] = 0
    for record in found.records:
        if record.node_id not in out.hops:
            out.nodes.append(record.node_id)
            out.hops[record.node_id] = found.hops.get(record.node_id, 1)
    out.edges = list(found.edges)
    if len(found.records) >= limit:
        out.partial, out.stop_reason = True, f"graph store limit={limit}"
    return out
