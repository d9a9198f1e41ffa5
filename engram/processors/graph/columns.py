"""Growable typed columns: the graph's node and edge tables, appended to in amortized O(1)."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt


class Column:
    """One numpy column that doubles its capacity as it grows; ``values`` is the filled prefix."""

    __slots__ = ("_data", "_fill", "size")

    def __init__(self, dtype: npt.DTypeLike, fill: Any = 0) -> None:
        self._data: npt.NDArray[Any] = np.full(64, fill, dtype=dtype)
        self._fill = fill
        self.size = 0

    def append(self, value: Any) -> int:
        if self.size == len(self._data):
            grown = np.full(2 * len(self._data), self._fill, dtype=self._data.dtype)
            grown[: self.size] = self._data
            self._data = grown
        self._data[self.size] = value
        self.size += 1
        return self.size - 1

    def grow(self) -> int:
        """Append the fill value."""
        return self.append(self._fill)

    def __setitem__(self, row: int, value: Any) -> None:
        self._data[row] = value

    def __getitem__(self, row: int) -> Any:
        return self._data[row]

    @property
    def values(self) -> npt.NDArray[Any]:
        return self._data[: self.size]


class Matrix:
    """Rows of float32 vectors, unit-normalized, grown by a quarter of their rows at a time; the width
    is fixed by the first vector stored. Rows never set are zero (``has`` says which are set)."""

    __slots__ = ("_data", "has", "size")

    def __init__(self) -> None:
        self._data: npt.NDArray[np.float32] | None = None
        self.has = Column(np.bool_, False)
        self.size = 0

    @property
    def dim(self) -> int:
        return 0 if self._data is None else int(self._data.shape[1])

    def ensure(self, rows: int) -> None:
        while self.has.size < rows:
            self.has.append(False)
        self.size = max(self.size, rows)

    def set(self, row: int, vector: npt.ArrayLike) -> None:
        v = np.asarray(vector, dtype=np.float32).ravel()
        if self._data is None:
            self._data = np.zeros((max(64, row + 1), len(v)), dtype=np.float32)
        if len(v) != self.dim:
            return  # a vector of another model: left out of similarity rather than mixed in
        if row >= len(self._data):
            # By a quarter, not doubled: a row is a whole vector, and doubling left up to half empty.
            grown = np.zeros(
                (max(len(self._data) + max(len(self._data) // 4, 64), row + 1), self.dim), dtype=np.float32
            )
            grown[: len(self._data)] = self._data
            self._data = grown
        norm = float(np.linalg.norm(v))
        self._data[row] = v / norm if norm > 0 else v
        self.ensure(row + 1)
        self.has[row] = norm > 0

    def clear(self, row: int) -> None:
        """Zero a row (its vector is forgotten, as if never set)."""
        if self._data is not None and row < len(self._data):
            self._data[row] = 0.0
        if row < self.has.size:
            self.has[row] = False

    def rows(self, count: int) -> npt.NDArray[np.float32]:
        """The first ``count`` rows (zero-padded when fewer were ever set)."""
        if self._data is None:
            return np.zeros((count, 0), dtype=np.float32)
        if len(self._data) < count:
            grown = np.zeros((count, self.dim), dtype=np.float32)
            grown[: len(self._data)] = self._data
            self._data = grown
        return self._data[:count]

    def mask(self, count: int) -> npt.NDArray[np.bool_]:
        out = np.zeros(count, dtype=np.bool_)
        filled = min(count, self.has.size)
        out[:filled] = self.has.values[:filled]
        return out

    def take(self, rows: npt.NDArray[np.intp], count: int) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.bool_]]:
        """The unit vectors of ``rows`` among the first ``count`` (all of them: no copy), and which
        rows have one."""
        matrix = self.rows(count)
        has = self.mask(count)[rows]
        return (matrix if rows.shape[0] == count else matrix[rows]), has
