"""A principal's subgraph: restrict before traversal (seed 000 §4.3), as the compiler does.

Every query runs on a `Subgraph`: the live nodes the principal may see, renumbered 0..n-1 in row
order, and the live edges between two of them (self-loops left out). Nothing outside it is
touched by a traversal, a score or a statistic, so a result over visible nodes is the same with or
without invisible data in the store. Its CSR arrays (out and in) are derived in O(V + E) numpy
once per (principal, store version) and cached by `GraphEngine`; the structures a query needs
beyond them (adjacency lists for the BFS, the PageRank matrix, the fingerprints) are cached on it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

from engram.processors.graph.store import NO_CODE, GraphStore
from engram.processors.graph.types import EdgeType, Principal
from engram.processors.rebac import USER_LAYER
from engram.schemas.records import LAYERS

IntArray = npt.NDArray[np.int64]
T = TypeVar("T")


def visible_rows(store: GraphStore, principal: Principal) -> npt.NDArray[np.bool_]:
    """The rows ``principal`` may see: live, in an authorized layer, their own when USER, in an
    instance the principal reads otherwise."""
    layer = store.layer.values
    allowed = np.isin(layer, [LAYERS.index(name) for name in principal.layers])
    user_code = store.user_code(principal.user_id)
    own = store.owner.values == user_code if user_code != NO_CODE else np.zeros(len(layer), dtype=np.bool_)
    user_rows = layer == LAYERS.index(USER_LAYER)
    shared = ~user_rows
    if principal.instances is not None:
        shared &= np.isin(store.home.values, store.instance_codes(principal.instances))
    visible: npt.NDArray[np.bool_] = store.alive.values & allowed & ((user_rows & own) | shared)
    return visible


def _csr(keys: IntArray, others: IntArray, n: int) -> tuple[IntArray, IntArray, IntArray]:
    """CSR over ``keys`` (stable: a row's entries keep edge order): indptr, neighbours, edge ids."""
    order = np.argsort(keys, kind="stable")
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=indptr[1:])
    return indptr, others[order], order


class Subgraph:
    """See the module docstring. ``rows``: the store rows of the local nodes, ascending."""

    def __init__(self, store: GraphStore, principal: Principal) -> None:
        self.store = store
        self.principal = principal
        self.version = store.version
        visible = visible_rows(store, principal)
        self.rows: IntArray = np.flatnonzero(visible)
        self.n = len(self.rows)
        self.local: IntArray = np.full(len(store), -1, dtype=np.int64)
        self.local[self.rows] = np.arange(self.n)
        src, dst = store.src.values, store.dst.values
        keep = store.edge_alive.values & visible[src] & visible[dst] & (src != dst)
        self.edge_rows: IntArray = np.flatnonzero(keep)
        self.src: IntArray = self.local[src[keep]]
        self.dst: IntArray = self.local[dst[keep]]
        self.edge_type: npt.NDArray[np.int8] = store.edge_type.values[keep]
        self.weight: npt.NDArray[np.float32] = store.weight.values[keep]
        self.out_ptr, self.out_idx, self.out_edge = _csr(self.src, self.dst, self.n)
        self.in_ptr, self.in_idx, self.in_edge = _csr(self.dst, self.src, self.n)
        self._memo: dict[str, Any] = {}

    def memo(self, key: str, build: Callable[[], T]) -> T:
        """A structure a query derives from this subgraph, built on first use and kept."""
        if key not in self._memo:
            self._memo[key] = build()
        return cast(T, self._memo[key])

    @property
    def m(self) -> int:
        return len(self.src)

    # --- per node --------------------------------------------------------------------------------

    def node_id(self, local: int) -> str:
        return self.store.ids[int(self.rows[local])]

    def find(self, node_id: str) -> int | None:
        """The local index of a node id, None when absent or not visible."""
        row = self.store.index.get(node_id)
        if row is None:
            return None
        local = int(self.local[row])
        return local if local >= 0 else None

    @cached_property
    def node_type(self) -> npt.NDArray[np.int8]:
        return self.store.node_type.values[self.rows]

    @cached_property
    def confidence(self) -> npt.NDArray[np.float32]:
        return self.store.confidence.values[self.rows]

    @cached_property
    def time_ms(self) -> npt.NDArray[np.int64]:
        return self.store.time_ms.values[self.rows]

    @cached_property
    def session(self) -> npt.NDArray[np.int32]:
        return self.store.session.values[self.rows]

    @cached_property
    def dormant(self) -> npt.NDArray[np.bool_]:
        return self.store.dormant.values[self.rows]

    @cached_property
    def retracted(self) -> npt.NDArray[np.bool_]:
        return self.store.retracted.values[self.rows]

    # --- derived structures ----------------------------------------------------------------------

    @cached_property
    def out_lists(self) -> list[list[int]]:
        """Out-neighbours per node as Python lists (the bidirectional BFS walks these)."""
        return [a.tolist() for a in np.split(self.out_idx, self.out_ptr[1:-1])] if self.n else []

    @cached_property
    def in_lists(self) -> list[list[int]]:
        return [a.tolist() for a in np.split(self.in_idx, self.in_ptr[1:-1])] if self.n else []

    @cached_property
    def out_weights(self) -> list[list[float]]:
        """Edge weights aligned with `out_lists` (Dijkstra's distances)."""
        weights = self.weight[self.out_edge].astype(np.float64)
        return [a.tolist() for a in np.split(weights, self.out_ptr[1:-1])] if self.n else []

    @cached_property
    def in_weights(self) -> list[list[float]]:
        weights = self.weight[self.in_edge].astype(np.float64)
        return [a.tolist() for a in np.split(weights, self.in_ptr[1:-1])] if self.n else []

    @cached_property
    def adjacency(self) -> sp.csr_array:
        """0/1 adjacency (parallel edges collapsed), rows = sources."""
        ones = np.ones(self.m, dtype=np.float64)
        matrix = sp.csr_array((ones, (self.src, self.dst)), shape=(self.n, self.n))
        matrix.data[:] = 1.0
        return matrix

    @cached_property
    def multiplicity(self) -> sp.csr_array:
        """Edge counts (parallel edges summed), rows = sources."""
        ones = np.ones(self.m, dtype=np.float64)
        return sp.csr_array((ones, (self.src, self.dst)), shape=(self.n, self.n))

    def typed_degree(self) -> npt.NDArray[np.float64]:
        """Per node, the count of incident edges of each seed edge type (n × 7)."""
        out = np.zeros((self.n, len(EdgeType)), dtype=np.float64)
        np.add.at(out, (self.src, self.edge_type), 1.0)
        np.add.at(out, (self.dst, self.edge_type), 1.0)
        return out

    def edges_of(self, types: frozenset[EdgeType]) -> npt.NDArray[np.bool_]:
        return np.isin(self.edge_type, [int(t) for t in types])
