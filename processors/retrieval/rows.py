"""Row storage for one block of nodes: liveness, kind codes, an embedding matrix and a BM25 index.

The view keeps one ``RowBlock`` per (owner, layer): USER-layer nodes are owned by their user;
nodes of the shared layers (SYSTEM, ORGANIZATION, TEAM) have owner ``None``. A request for user U
with layers L therefore touches only the blocks it may see, each a contiguous matrix: ReBAC picks
the rows before any dot product, and no unauthorized row is copied or scored.

Rows are append-only; removing or replacing a node clears its ``searchable`` bit (a tombstone).
The embedding matrix grows in chunks of ``chunk_rows`` rows; its rows are L2-normalized float32,
so cosine is a dot product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeVar, cast

import numpy as np
import numpy.typing as npt

from processors.retrieval.bm25 import Mask, PostingIndex

Matrix = npt.NDArray[np.float32]
_Array = TypeVar("_Array", bound=npt.NDArray[Any])


def _grown(array: _Array, rows: int, chunk: int) -> _Array:
    if rows <= array.shape[0]:
        return array
    new_rows = max(rows, array.shape[0] + chunk, array.shape[0] * 2)
    grown = np.zeros((new_rows, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return cast(_Array, grown)


class RowBlock:
    """The rows of one (owner, layer). Invariant: every array below has at least ``size`` rows."""

    def __init__(self, chunk_rows: int = 4096) -> None:
        self.chunk_rows = chunk_rows
        self.node_ids: list[str] = []
        self.kind = np.zeros(0, dtype=np.int32)
        self.searchable = np.zeros(0, dtype=np.bool_)
        self.has_vector = np.zeros(0, dtype=np.bool_)
        self.vectors: Matrix | None = None
        self.text_index = PostingIndex()

    @property
    def size(self) -> int:
        return len(self.node_ids)

    def append(self, node_id: str, kind: int, tokens: Sequence[str]) -> int:
        """A new row for ``node_id``; ``kind`` is the view's code for the node kind."""
        row = self.size
        if row >= self.kind.shape[0]:
            self.kind = _grown(self.kind, row + 1, self.chunk_rows)
            self.searchable = _grown(self.searchable, row + 1, self.chunk_rows)
            self.has_vector = _grown(self.has_vector, row + 1, self.chunk_rows)
        self.node_ids.append(node_id)
        self.kind[row] = kind
        self.searchable[row] = True
        self.has_vector[row] = False
        self.text_index.add(row, tokens)
        return row

    def set_vector(self, row: int, vector: npt.NDArray[np.floating]) -> None:
        """Store ``vector`` (any float dtype) L2-normalized; a zero vector leaves the row without one."""
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0 or not np.isfinite(norm):
            return
        if self.vectors is None:
            self.vectors = np.zeros((self.chunk_rows, vec.shape[0]), dtype=np.float32)
        if vec.shape[0] != self.vectors.shape[1]:
            msg = f"embedding has {vec.shape[0]} dimensions, the view holds {self.vectors.shape[1]}"
            raise ValueError(msg)
        self.vectors = _grown(self.vectors, row + 1, self.chunk_rows)
        self.vectors[row] = vec / norm
        self.has_vector[row] = True

    def live(self, kinds: npt.NDArray[np.int32] | None = None) -> Mask:
        """Searchable rows, narrowed to the given kind codes when ``kinds`` is not None."""
        n = self.size
        mask = self.searchable[:n].copy()
        if kinds is not None:
            mask &= np.isin(self.kind[:n], kinds)
        return mask

    def similarities(self, query: Matrix, mask: Mask) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Cosine of ``query`` (unit, float32) with the masked rows that have a vector.

        Every row of a block is authorized, so the dot products run on the contiguous matrix
        (one gemv, no copy) unless the mask keeps under a quarter of the rows.
        """
        n = self.size
        if self.vectors is None or n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        keep = mask & self.has_vector[:n]
        count = int(keep.sum())
        if count * 4 < n:
            rows = np.flatnonzero(keep)
            return rows, self.vectors[rows] @ query
        sims = self.vectors[:n] @ query
        if count == n:
            return np.arange(n), sims
        rows = np.flatnonzero(keep)
        return rows, sims[rows]
