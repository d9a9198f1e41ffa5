"""Row storage for one owner's nodes: layer codes, liveness, an embedding matrix and a BM25 index.

The view keeps one ``OwnerRows`` per owner (a user id, or ``None`` for shared nodes), so a search
for a user only ever touches that user's rows and the shared ones. Rows are append-only; removing
or replacing a node clears its ``searchable`` bit (a tombstone). The embedding matrix grows in
chunks of ``chunk_rows`` rows; its rows are L2-normalized float32, so cosine is a dot product.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, TypeVar, cast

import numpy as np
import numpy.typing as npt

from processors.retrieval.bm25 import Mask, PostingIndex
from schemas.records import LAYERS, Layer

LAYER_CODES: Final[dict[Layer, int]] = {layer: code for code, layer in enumerate(LAYERS)}
Matrix = npt.NDArray[np.float32]
_Array = TypeVar("_Array", bound=npt.NDArray[Any])


def layer_filter(layers: Sequence[Layer] | frozenset[Layer] | set[Layer]) -> Mask:
    """A lookup table code -> authorized, for masking layer-code arrays."""
    table = np.zeros(len(LAYERS), dtype=np.bool_)
    for layer in layers:
        table[LAYER_CODES[layer]] = True
    return table


def _grown(array: _Array, rows: int, chunk: int) -> _Array:
    if rows <= array.shape[0]:
        return array
    new_rows = max(rows, array.shape[0] + chunk, array.shape[0] * 2)
    grown = np.zeros((new_rows, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return cast(_Array, grown)


class OwnerRows:
    """The rows of one owner. Invariant: every array below has at least ``size`` rows."""

    def __init__(self, chunk_rows: int = 4096) -> None:
        self.chunk_rows = chunk_rows
        self.node_ids: list[str] = []
        self.layer = np.zeros(0, dtype=np.int8)
        self.kind = np.zeros(0, dtype=np.int32)
        self.searchable = np.zeros(0, dtype=np.bool_)
        self.has_vector = np.zeros(0, dtype=np.bool_)
        self.vectors: Matrix | None = None
        self.text_index = PostingIndex()

    @property
    def size(self) -> int:
        return len(self.node_ids)

    def append(self, node_id: str, layer: Layer, kind: int, tokens: Sequence[str]) -> int:
        """A new row for ``node_id``; ``kind`` is the view's code for the node kind."""
        row = self.size
        self.layer = _grown(self.layer, row + 1, self.chunk_rows)
        self.kind = _grown(self.kind, row + 1, self.chunk_rows)
        self.searchable = _grown(self.searchable, row + 1, self.chunk_rows)
        self.has_vector = _grown(self.has_vector, row + 1, self.chunk_rows)
        self.node_ids.append(node_id)
        self.layer[row] = LAYER_CODES[layer]
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

    def allowed(self, table: Mask, kinds: npt.NDArray[np.int32] | None = None) -> Mask:
        """Rows that are searchable, whose layer is authorized by ``table`` (see layer_filter) and,
        when ``kinds`` (kind codes) is given, whose kind is one of them."""
        n = self.size
        mask = self.searchable[:n] & table[self.layer[:n]]
        if kinds is not None:
            mask &= np.isin(self.kind[:n], kinds)
        return mask
