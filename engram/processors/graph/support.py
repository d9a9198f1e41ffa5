"""Who supports whom: the dependency relation belief revision, gap detection and consolidation share.

A SUPPORTS edge u → w says w depends on u; a CAUSED_BY edge w → u says the same. `SupportPairs`
holds every (supporter, supported) pair of the subgraph once, both directions in CSR form.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import EdgeType

IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class SupportPairs:
    supporter: IntArray
    supported: IntArray
    down_ptr: IntArray  # supporter → its dependents
    down: IntArray
    up_ptr: IntArray  # supported → its supporters
    up: IntArray

    def dependents(self, node: int) -> IntArray:
        return self.down[self.down_ptr[node] : self.down_ptr[node + 1]]

    def supporters(self, node: int) -> IntArray:
        return self.up[self.up_ptr[node] : self.up_ptr[node + 1]]

    def support_count(self, n: int) -> IntArray:
        return np.diff(self.up_ptr)[:n]


def _csr(keys: IntArray, values: IntArray, n: int) -> tuple[IntArray, IntArray]:
    order = np.argsort(keys, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(keys, minlength=n), out=ptr[1:])
    return ptr, values[order]


def support_pairs(sub: Subgraph) -> SupportPairs:
    """The distinct (supporter, supported) pairs of ``sub``, cached on it."""

    def build() -> SupportPairs:
        supports = sub.edge_type == EdgeType.SUPPORTS
        caused = sub.edge_type == EdgeType.CAUSED_BY
        supporter = np.concatenate([sub.src[supports], sub.dst[caused]])
        supported = np.concatenate([sub.dst[supports], sub.src[caused]])
        if len(supporter):
            pairs = np.unique(np.stack([supporter, supported], axis=1), axis=0)
            supporter, supported = pairs[:, 0], pairs[:, 1]
        down_ptr, down = _csr(supporter, supported, sub.n)
        up_ptr, up = _csr(supported, supporter, sub.n)
        return SupportPairs(supporter, supported, down_ptr, down, up_ptr, up)

    return sub.memo("support-pairs", build)
