"""Row storage for one block of nodes: liveness, kind codes, an embedding matrix and a BM25 index.

The view keeps one ``RowBlock`` per (owner, layer): USER-layer nodes are owned by their user;
nodes of the shared layers (SYSTEM, ORGANIZATION, TEAM) have owner ``None``. A request for user U
with layers L therefore touches only the blocks it may see, each a contiguous matrix: ReBAC picks
the rows before any dot product, and no unauthorized row is copied or scored.

Rows are append-only; removing or replacing a node clears its ``searchable`` bit (a tombstone).
A block whose tombstones reach a quarter of its rows is rebuilt without them (``compacted``): the rows
left keep their order, so every search and its ties come out as before, and a block holds what its
owner has now, not every version of it (a concept is upserted again on each turn that joins it).
The embedding matrix grows by a quarter, in steps of at most ``chunk_rows`` rows; its rows are L2-normalized float32,
so cosine is a dot product. A block of at least ``SHORTLIST_FROM_ROWS`` rows also keeps int8 codes of
them (retrieval/quantized.py), built at its first such search and kept up to date after: a search
that wants its best ``k`` scores every row from the codes, keeps the best ``max(4k, 256)``, and
scores those exactly, so the ``k`` it returns carry the exact cosines of the one-pass search.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final, Literal, TypeVar, cast

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval import quantized
from engram.processors.retrieval.bm25 import Mask, PostingIndex
from engram.processors.retrieval.topk import top_indices

Matrix = npt.NDArray[np.float32]
_Array = TypeVar("_Array", bound=npt.NDArray[Any])


Scope = Literal["live", "archived", "all"]


MIN_ROWS = 16
SHORTLIST_FROM_ROWS: Final = 8192
"""A block this large is searched in two passes (`RowBlock.similarities`); a smaller one is
scored exactly in one (a few milliseconds at most), and keeps no int8 codes."""
SHORTLIST_FACTOR: Final = 4
SHORTLIST_MIN: Final = 256


def _grown(array: _Array, rows: int, chunk: int) -> _Array:
    """``array`` with room for ``rows``: grown by a quarter (at least ``MIN_ROWS``, at most ``chunk``
    rows a step), so a block's slack stays under a quarter of it and under ``chunk`` while each row
    is still copied O(1) times (a worker keeps a block per user: a fixed first chunk, or doubling,
    would cost every user up to that many empty rows of vectors)."""
    if rows <= array.shape[0]:
        return array
    size = array.shape[0]
    new_rows = max(rows, size + min(max(size // 4, MIN_ROWS), chunk))
    grown = np.zeros((new_rows, *array.shape[1:]), dtype=array.dtype)
    grown[: array.shape[0]] = array
    return cast(_Array, grown)


class RowBlock:
    """The rows of one (owner, layer). Invariant: every array below has at least ``size`` rows.

    Contextual vectors: with ``context = (a, b)`` not (0, 0), a row is matched as the unit vector of
    ``v + a*v_prev + b*v_next``, its conversational neighbours in the same block (set by
    ``set_context``). Cosine is linear in the numerator, so it is computed at query time from the
    plain similarities and a stored per-row norm; no second matrix is kept.
    """

    def __init__(
        self,
        chunk_rows: int = 4096,
        context: tuple[float, float] = (0.0, 0.0),
        shortlist_from: int = SHORTLIST_FROM_ROWS,
    ) -> None:
        self.chunk_rows = chunk_rows
        self.context = context
        self.shortlist_from = shortlist_from  # rows from which a search for the k best takes two passes
        self.prev_row = np.zeros(0, dtype=np.int64)
        self.next_row = np.zeros(0, dtype=np.int64)
        self.context_norm = np.zeros(0, dtype=np.float32)
        self.node_ids: list[str] = []
        self.kind = np.zeros(0, dtype=np.int32)
        self.searchable = np.zeros(0, dtype=np.bool_)
        self.archived = np.zeros(0, dtype=np.bool_)  # dormant rows: out of live search, in the archive's
        self.has_vector = np.zeros(0, dtype=np.bool_)
        # when each row's node happened, [start, end) in epoch ms: the date it states, else when it
        # was said (`dated`); (-1, -1) for a node of no time
        self.span_start = np.zeros(0, dtype=np.int64)
        self.span_end = np.zeros(0, dtype=np.int64)
        self.vectors: Matrix | None = None
        self.codes: quantized.Codes | None = None  # int8 rows of ``vectors``, once the block is large
        self.code_scales: quantized.Scales = np.zeros(0, dtype=np.float32)
        self.text_index = PostingIndex()

    @property
    def size(self) -> int:
        return len(self.node_ids)

    def tombstones(self) -> int:
        """Rows neither searchable nor archived nor a held row's context: a replaced or removed
        node's old rows, and those of nodes that left RAM with no held neighbour."""
        return self.size - int(np.count_nonzero(self._kept_rows()))

    def _kept_rows(self) -> Mask:
        """Searchable and archived rows, and the rows their context links point at: a node that left
        RAM (`stored`) keeps its vector row while a held neighbour's contextual vector reads it."""
        n = self.size
        held = self.searchable[:n] | self.archived[:n]
        kept = held.copy()
        for links in (self.prev_row[:n][held], self.next_row[:n][held]):
            kept[links[links >= 0]] = True
        return kept

    def context_rows(self) -> int:
        """Rows kept only as a held row's context (neither searchable nor archived)."""
        n = self.size
        return int(np.count_nonzero(self._kept_rows() & ~(self.searchable[:n] | self.archived[:n])))

    def compacted(self) -> tuple[RowBlock, npt.NDArray[np.int64]]:
        """A block of the rows that are not tombstones, in their order (a context link to a
        tombstone becomes no link), and where each old row went (-1: dropped)."""
        n = self.size
        kept = np.flatnonzero(self._kept_rows())
        moved = np.full(n + 1, -1, dtype=np.int64)  # moved[-1] == -1: "no link" stays no link
        moved[kept] = np.arange(kept.shape[0])
        out = RowBlock(self.chunk_rows, self.context, self.shortlist_from)
        out.node_ids = [self.node_ids[row] for row in kept.tolist()]
        out.kind, out.searchable, out.archived = self.kind[kept], self.searchable[kept], self.archived[kept]
        out.has_vector, out.context_norm = self.has_vector[kept], self.context_norm[kept]
        out.span_start, out.span_end = self.span_start[kept], self.span_end[kept]
        out.prev_row, out.next_row = moved[self.prev_row[kept]], moved[self.next_row[kept]]
        if self.vectors is not None:
            out.vectors = self.vectors[kept]
        if self.codes is not None:
            out.codes, out.code_scales = self.codes[kept], self.code_scales[kept]
        out.text_index = self.text_index.kept(kept)
        return out, moved[:n]

    def append(self, node_id: str, kind: int, tokens: Sequence[str], span: tuple[int, int] = (-1, -1)) -> int:
        """A new row for ``node_id``; ``kind`` is the view's code for the node kind, ``span`` when
        it happened ([start, end) in epoch ms)."""
        row = self.size
        if row >= self.kind.shape[0]:
            self.kind = _grown(self.kind, row + 1, self.chunk_rows)
            self.searchable = _grown(self.searchable, row + 1, self.chunk_rows)
            self.archived = _grown(self.archived, row + 1, self.chunk_rows)
            self.has_vector = _grown(self.has_vector, row + 1, self.chunk_rows)
            self.prev_row = _grown(self.prev_row, row + 1, self.chunk_rows)
            self.next_row = _grown(self.next_row, row + 1, self.chunk_rows)
            self.context_norm = _grown(self.context_norm, row + 1, self.chunk_rows)
            self.span_start = _grown(self.span_start, row + 1, self.chunk_rows)
            self.span_end = _grown(self.span_end, row + 1, self.chunk_rows)
        if self.vectors is not None:  # invariant: the matrix covers every row (zero rows: no vector)
            self.vectors = _grown(self.vectors, row + 1, self.chunk_rows)
        if self.codes is not None:  # so do the codes, once there are any
            self.codes = _grown(self.codes, row + 1, self.chunk_rows)
            self.code_scales = _grown(self.code_scales, row + 1, self.chunk_rows)
        self.node_ids.append(node_id)
        self.prev_row[row] = self.next_row[row] = -1
        self.context_norm[row] = 1.0
        self.kind[row] = kind
        self.searchable[row] = True
        self.archived[row] = False
        self.has_vector[row] = False
        self.span_start[row], self.span_end[row] = span
        self.text_index.add(row, tokens)
        return row

    def set_vector(self, row: int, vector: npt.NDArray[np.floating]) -> None:
        """Store ``vector`` (any float dtype) L2-normalized; a zero vector leaves the row without one."""
        vec = np.asarray(vector, dtype=np.float32).reshape(-1)
        norm = float(np.linalg.norm(vec))
        if norm == 0.0 or not np.isfinite(norm):
            return
        if self.vectors is None:
            self.vectors = np.zeros((self.kind.shape[0], vec.shape[0]), dtype=np.float32)
        if vec.shape[0] != self.vectors.shape[1]:
            msg = f"embedding has {vec.shape[0]} dimensions, the view holds {self.vectors.shape[1]}"
            raise ValueError(msg)
        self.vectors = _grown(self.vectors, row + 1, self.chunk_rows)
        self.vectors[row] = vec / norm
        if self.codes is not None:
            self.codes = _grown(self.codes, row + 1, self.chunk_rows)
            self.code_scales = _grown(self.code_scales, row + 1, self.chunk_rows)
            codes, scales = quantized.quantize(self.vectors[row : row + 1])
            self.codes[row], self.code_scales[row] = codes[0], scales[0]
        self.has_vector[row] = True
        for affected in (row, int(self.prev_row[row]), int(self.next_row[row])):
            self._update_norm(affected)

    def matched_vector(self, row: int) -> npt.NDArray[np.float32] | None:
        """The unit vector a search matches ``row`` by (its contextual vector when the block has
        context weights), None for a row without a vector."""
        if self.vectors is None or not self.has_vector[row]:
            return None
        vec = self._context_sum(self.vectors, row)
        norm = float(np.linalg.norm(vec))
        return (vec / norm).astype(np.float32) if norm > 0.0 else None

    def set_context(self, row: int, prev_row: int, next_row: int) -> None:
        """The rows (in this block, -1 for none) before and after ``row`` in its conversation."""
        self.prev_row[row], self.next_row[row] = prev_row, next_row
        self._update_norm(row)

    def _update_norm(self, row: int) -> None:
        if row < 0 or self.vectors is None or self.context == (0.0, 0.0):
            return
        norm = float(np.linalg.norm(self._context_sum(self.vectors, row)))
        self.context_norm[row] = norm if norm > 0.0 else 1.0

    def _context_sum(self, vectors: Matrix, row: int) -> npt.NDArray[np.float64]:
        """v + a*v_prev + b*v_next of ``row``, unnormalized."""
        vec: npt.NDArray[np.float64] = vectors[row].astype(np.float64)
        for neighbour, weight in (
            (int(self.prev_row[row]), self.context[0]),
            (int(self.next_row[row]), self.context[1]),
        ):
            if neighbour >= 0 and self.has_vector[neighbour]:
                vec = vec + weight * vectors[neighbour]
        return vec

    def live(self, kinds: npt.NDArray[np.int32] | None = None, scope: Scope = "live") -> Mask:
        """Searchable rows (``scope`` "archived": the dormant rows instead; "all": both), narrowed to
        the given kind codes when ``kinds`` is not None."""
        n = self.size
        if scope == "live":
            mask = self.searchable[:n].copy()
        elif scope == "archived":
            mask = self.archived[:n].copy()
        else:
            mask = self.searchable[:n] | self.archived[:n]
        if kinds is not None:
            mask &= np.isin(self.kind[:n], kinds)
        return mask

    def within(self, window: tuple[int, int]) -> Mask:
        """The rows whose span overlaps ``window`` ([start, end) in epoch ms)."""
        n = self.size
        return (self.span_start[:n] < window[1]) & (self.span_end[:n] > window[0])

    def similarities(
        self, query: Matrix, mask: Mask, k: int | None = None
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """Cosine of ``query`` (unit, float32) with the masked rows that have a vector; with ``k``,
        at least the ``k`` best of them (a caller that ranks the rows wants no more).

        Every row of a block is authorized, so the dot products run on the contiguous matrix
        (no copy) unless the mask keeps under a quarter of the rows. ``np.vecdot`` rather than a
        BLAS gemv: OpenBLAS threads a gemv this size, which costs ~1.5 ms per search instead of
        ~0.05 ms when the cores are busy (a worker next to its broker). A block of at least
        ``shortlist_from`` rows asked for its ``k`` best is searched in two passes
        (`_shortlisted`).
        """
        n = self.size
        if self.vectors is None or n == 0:
            return np.empty(0, dtype=np.int64), np.empty(0, dtype=np.float32)
        keep = mask & self.has_vector[:n]
        count = int(keep.sum())
        contextual = self.context != (0.0, 0.0)
        if count * 4 < n and not contextual:
            rows = np.flatnonzero(keep)
            return rows, np.vecdot(self.vectors[rows], query)
        shortlist = max(SHORTLIST_FACTOR * k, SHORTLIST_MIN) if k is not None else n
        if n >= self.shortlist_from and count > shortlist:
            return self._shortlisted(self.vectors, query, keep, shortlist, contextual)
        sims = np.vecdot(self.vectors[:n], query)
        if contextual:
            sims = self._contextual(sims)
        if count == n:
            return np.arange(n), sims
        rows = np.flatnonzero(keep)
        return rows, sims[rows]

    def _shortlisted(
        self, vectors: Matrix, query: Matrix, keep: Mask, size: int, contextual: bool
    ) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float32]]:
        """The ``size`` kept rows the int8 codes score best (contextual, as the exact scores are),
        in row order, with their exact cosines: the rows the one-pass search would rank first, as
        long as its best ``size // 4`` are among them (the codes are about 1e-3 off). The codes are
        built from ``vectors`` at the block's first such search; ``append`` and ``set_vector``
        keep them up to date after."""
        n = self.size
        if self.codes is None:
            self.codes, self.code_scales = quantized.quantize(vectors)
        approx = quantized.dots(self.codes[:n], self.code_scales[:n], query)
        if contextual:
            approx = self._contextual(approx)
        approx[~keep] = -np.inf
        rows = np.sort(top_indices(approx, size)).astype(np.int64)
        if not contextual:
            return rows, np.vecdot(vectors[rows], query)
        return rows, self._contextual_at(vectors, rows, query)

    def _contextual_at(self, vectors: Matrix, rows: npt.NDArray[np.int64], query: Matrix) -> npt.NDArray[np.float32]:
        """`_contextual` for ``rows`` alone: their plain cosines and their neighbours', combined in
        the same float32 steps, so each value equals the whole block's."""
        prev, after = self.prev_row[rows], self.next_row[rows]
        needed = np.unique(np.concatenate([rows, prev[prev >= 0], after[after >= 0]]))
        plain = np.vecdot(vectors[needed], query)
        out = plain[np.searchsorted(needed, rows)]
        for links, weight in ((prev, self.context[0]), (after, self.context[1])):
            linked = links >= 0
            out[linked] += np.float32(weight) * plain[np.searchsorted(needed, links[linked])]
        return cast(npt.NDArray[np.float32], out / self.context_norm[rows])

    def _contextual(self, sims: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
        """Cosine with each row's contextual vector, from the plain cosines (rows without a vector
        are zero rows, so they add nothing)."""
        n = sims.shape[0]
        out = sims.copy()
        for links, weight in ((self.prev_row[:n], self.context[0]), (self.next_row[:n], self.context[1])):
            linked = links >= 0
            out[linked] += np.float32(weight) * sims[links[linked]]
        return out / self.context_norm[:n]
