"""Where the graph store's node vectors live: its own matrix, or a worker's view.

A worker feeds its view and its graph engine the same MemoryEvents, and the view already holds
every node's unit vector. A second copy in the engine was a kilobyte a node (256 float32s), the
largest part of what the engine held per node. `BorrowedVectors` reads the view's rows by node id
when a query needs them instead, normalized exactly as `Matrix.set` normalizes a vector it keeps,
so a query's cosines are those of the copy, bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

Rows = npt.NDArray[np.intp]
Unit = npt.NDArray[np.float32]
VectorLookup = Callable[[Sequence[str]], npt.NDArray[np.float32]]

__all__ = ["BorrowedVectors", "NodeVectors", "VectorLookup", "unit_rows"]


class NodeVectors(Protocol):
    """A graph store's vectors by row: ``take`` gives the unit rows asked for and which have one."""

    @property
    def dim(self) -> int: ...

    def set(self, row: int, vector: npt.ArrayLike) -> None: ...

    def clear(self, row: int) -> None: ...

    def take(self, rows: Rows, count: int) -> tuple[Unit, npt.NDArray[np.bool_]]: ...


def unit_rows(matrix: npt.NDArray[np.float32]) -> tuple[Unit, npt.NDArray[np.bool_]]:
    """Each row over its norm (zero rows stay zero, and have no vector). The norm is the float32
    dot of the row with itself, as ``np.linalg.norm`` computes it for one row (a stacked matmul:
    the same BLAS dot per row, where ``norm(axis=1)`` sums in another order)."""
    rows = np.ascontiguousarray(matrix, dtype=np.float32)
    norms = np.sqrt((rows[:, None, :] @ rows[:, :, None]).reshape(-1))
    has = norms > 0
    out = np.divide(rows, norms[:, None], out=np.zeros_like(rows), where=has[:, None])
    return out, has


class BorrowedVectors:
    """The vectors a worker's view holds, read through ``lookup`` (`MemoryView.node_vectors`: zero
    rows for a node without one) for the store's ``ids``. The view is fed first, so it holds what a
    copy would: ``set`` and ``clear`` have nothing to keep."""

    def __init__(self, lookup: VectorLookup, ids: list[str]) -> None:
        self._lookup = lookup
        self._ids = ids

    @property
    def dim(self) -> int:
        return int(self._lookup([]).shape[1])

    def set(self, row: int, vector: npt.ArrayLike) -> None:
        """Kept by the view."""

    def clear(self, row: int) -> None:
        """Forgotten by the view (an erased node leaves it)."""

    def take(self, rows: Rows, count: int) -> tuple[Unit, npt.NDArray[np.bool_]]:
        ids = self._ids
        return unit_rows(self._lookup([ids[row] for row in rows.tolist()]))
