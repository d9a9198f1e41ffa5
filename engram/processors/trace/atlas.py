"""The Atlas: a user's concepts (V_concept), formed online, organised in levels.

Level 0 holds the concepts turns REF. A turn whose best level-0 similarity is > tau_ref REFs that
concept and its centroid absorbs the turn (running mean; the concept id never changes). Otherwise
the turn founds a new concept (id = uuid5 of the user key, level and founding node). A new concept
at level l joins the best level l+1 parent above that level's (lower) threshold, with a CHILD_OF
edge, or founds one itself: the Atlas grows bottom-up, coarser level by coarser level.

Similarity is measured after removing the user's running mean embedding (the mean of the turns
placed before this one). Sentence embeddings are anisotropic: one user's chat turns are all
0.6-0.9 cosine-similar to each other, so raw running-mean centroids collapse into one concept that
absorbs everything. Centred, unrelated turns sit near 0 and tau_ref separates topics. Each concept
keeps two sums: the centred one decides membership; the raw one is what is published (the
concept node's embedding, ``TraceState.concepts``), so it compares with raw query embeddings.

Determinism: concept sums are float32 (the user's mean sum float64) and are updated element-wise
in input order; unit rows are recomputed from the sums one row at a time by ``unit_row``, so a
state restored from ``to_dict`` continues bit for bit where the original would have. State size:
about 2.7 KB of base64 per concept (two float32 sums of 256 dims), the bulk of a user's state.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from engram.schemas.events import stable_id

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]
MIN_MEAN_COUNT = 8


def unit_row(total: F32 | F64) -> F32:
    norm = float(np.sqrt((total * total).sum()))
    if norm == 0.0:
        return np.zeros(total.shape, dtype=np.float32)
    out: F32 = (total / norm).astype(np.float32)
    return out


def _b64(rows: F32 | F64, dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(rows, dtype=dtype).tobytes()).decode("ascii")


def _unb64(text: str, dim: int, dtype: str) -> npt.NDArray[Any]:
    return np.frombuffer(base64.b64decode(text), dtype=dtype).reshape(-1, dim)


@dataclass(frozen=True, slots=True)
class ConceptChange:
    """A concept to (re-)publish: founded (count == 1) or refreshed (count a power of two)."""

    concept_id: str
    level: int
    count: int
    parent_id: str | None
    founder: str
    vector: F32  # the raw-space unit centroid
    founded: bool


class ConceptLevel:
    """Concepts of one Atlas level: ids, member counts, parents, centred and raw centroid sums."""

    def __init__(self, dim: int, capacity: int = 16) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.counts: list[int] = []
        self.parents: list[str | None] = []
        self.founders: list[str] = []
        self.rows: dict[str, int] = {}
        self._sums: F32 = np.zeros((capacity, dim), dtype=np.float32)  # centred space
        self._raw: F32 = np.zeros((capacity, dim), dtype=np.float32)
        self._unit: F32 = np.zeros((capacity, dim), dtype=np.float32)
        self.dirty: set[int] = set()  # rows changed since they were last written

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def unit(self) -> F32:
        """Unit centroids in the centred space, shape (n, dim)."""
        return self._unit[: len(self.ids)]

    def raw_unit(self, row: int) -> F32:
        return unit_row(self._raw[row])

    def raw_units(self) -> F32:
        return (
            np.stack([self.raw_unit(r) for r in range(len(self.ids))])
            if self.ids
            else np.zeros((0, self.dim), np.float32)
        )

    def similarities(self, vector: F32) -> F32:
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        sims: F32 = self.unit @ vector
        return sims

    def add(self, concept_id: str, centred: F32, raw: F32, founder: str) -> int:
        row = len(self.ids)
        if row == self._sums.shape[0]:
            self._sums = np.concatenate([self._sums, np.zeros_like(self._sums)])
            self._raw = np.concatenate([self._raw, np.zeros_like(self._raw)])
            self._unit = np.concatenate([self._unit, np.zeros_like(self._unit)])
        self.ids.append(concept_id)
        self.counts.append(1)
        self.parents.append(None)
        self.founders.append(founder)
        self.rows[concept_id] = row
        self._sums[row] = centred
        self._raw[row] = raw
        self._unit[row] = unit_row(self._sums[row])
        self.dirty.add(row)
        return row

    def absorb(self, row: int, centred: F32, raw: F32) -> int:
        self._sums[row] += centred
        self._raw[row] += raw
        self._unit[row] = unit_row(self._sums[row])
        self.counts[row] += 1
        self.dirty.add(row)
        return self.counts[row]

    def to_dict(self) -> dict[str, Any]:
        n = len(self.ids)
        return {
            "ids": list(self.ids),
            "counts": list(self.counts),
            "parents": list(self.parents),
            "founders": list(self.founders),
            "sums": _b64(self._sums[:n], "<f4"),
            "raw": _b64(self._raw[:n], "<f4"),
        }

    def row_dict(self, row: int) -> dict[str, Any]:
        """One concept's JSON form (a part of the Trace state, processors/trace/records.py)."""
        return {
            "id": self.ids[row],
            "count": self.counts[row],
            "parent": self.parents[row],
            "founder": self.founders[row],
            "sums": _b64(self._sums[row : row + 1], "<f4"),
            "raw": _b64(self._raw[row : row + 1], "<f4"),
        }

    @classmethod
    def from_dict(cls, dim: int, data: dict[str, Any]) -> ConceptLevel:
        columns = zip(data["ids"], data["counts"], data["parents"], data["founders"], strict=True)
        return cls._filled(dim, list(columns), _unb64(data["sums"], dim, "<f4"), _unb64(data["raw"], dim, "<f4"))

    @classmethod
    def from_rows(cls, dim: int, rows: list[dict[str, Any]]) -> ConceptLevel:
        """The level of the concepts ``row_dict`` wrote, in row order."""
        columns = [(r["id"], r["count"], r["parent"], r["founder"]) for r in rows]
        sums = np.zeros((len(rows), dim), np.float32)
        raw = np.zeros((len(rows), dim), np.float32)
        for i, r in enumerate(rows):
            sums[i], raw[i] = _unb64(r["sums"], dim, "<f4")[0], _unb64(r["raw"], dim, "<f4")[0]
        return cls._filled(dim, columns, sums, raw)

    @classmethod
    def _filled(cls, dim: int, columns: list[tuple[Any, Any, Any, Any]], sums: F32, raw: F32) -> ConceptLevel:
        level = cls(dim, capacity=max(16, len(columns)))
        level.ids = [str(c[0]) for c in columns]
        level.counts = [int(c[1]) for c in columns]
        level.parents = [None if c[2] is None else str(c[2]) for c in columns]
        level.founders = [str(c[3]) for c in columns]
        level.rows = {cid: row for row, cid in enumerate(level.ids)}
        level._sums[: len(columns)] = sums
        level._raw[: len(columns)] = raw
        for row in range(len(columns)):
            level._unit[row] = unit_row(level._sums[row])
        return level


class Atlas:
    """All levels of one user's concepts, with the hierarchy (CHILD_OF) between them."""

    def __init__(self, key: str, dim: int, thresholds: tuple[float, ...], *, centred: bool = True) -> None:
        self.key = key
        self.dim = dim
        self.thresholds = thresholds
        self.centred = centred
        self.levels = [ConceptLevel(dim) for _ in thresholds]
        self.children: dict[str, list[str]] = {}
        self.mean_sum: F64 = np.zeros(dim, dtype=np.float64)
        self.seen = 0

    def centre(self, raw: F64) -> F32:
        """The turn as a unit vector of the centred space; then fold it into the user's mean."""
        if not self.centred:
            return unit_row(raw)
        # Early on the mean is a poor estimate: divide by at least MIN_MEAN_COUNT to shrink it to 0.
        centred = raw - self.mean_sum / max(self.seen, MIN_MEAN_COUNT)
        self.mean_sum += raw
        self.seen += 1
        return unit_row(centred)

    def place(
        self, vector: F32, founder: str, max_refs: int, max_concepts: int
    ) -> tuple[list[tuple[str, float]], list[ConceptChange]]:
        """REF targets ``[(concept_id, sim)]`` of one turn's vector, and the concepts to publish."""
        raw = vector.astype(np.float32)
        centred = self.centre(raw.astype(np.float64))  # unit: each turn weighs the same in a centroid
        if not centred.any():
            return [], []
        level = self.levels[0]
        sims = level.similarities(centred)
        changes: list[ConceptChange] = []
        refs: list[tuple[str, float]] = []
        if len(sims):
            order = [int(np.argmax(sims))] if max_refs == 1 else np.argsort(-sims, kind="stable")[:max_refs]
            refs = [(level.ids[int(r)], round(float(sims[r]), 6)) for r in order if sims[r] > self.thresholds[0]]
        if refs:
            self._absorb(0, level.rows[refs[0][0]], centred, raw, changes)
        elif len(level) < max_concepts:
            concept_id = self._found(0, centred, raw, founder, max_concepts, changes)
            refs = [(concept_id, 1.0)]
        return refs, changes

    def _absorb(self, depth: int, row: int, centred: F32, raw: F32, changes: list[ConceptChange]) -> None:
        count = self.levels[depth].absorb(row, centred, raw)
        if count & (count - 1) == 0:  # republish the centroid at 2, 4, 8, ... members
            changes.append(self._change(depth, row, founded=False))

    def _found(
        self, depth: int, centred: F32, raw: F32, founder: str, max_concepts: int, changes: list[ConceptChange]
    ) -> str:
        level = self.levels[depth]
        concept_id = stable_id("concept", self.key, depth, founder)
        row = level.add(concept_id, centred, raw, founder)
        founded_at = len(changes)
        if depth + 1 < len(self.levels):
            parent = self._parent_for(depth + 1, centred, raw, concept_id, max_concepts, changes)
            level.parents[row] = parent
            if parent is not None:
                self.children.setdefault(parent, []).append(concept_id)
        changes.insert(founded_at, self._change(depth, row, founded=True))
        return concept_id

    def _parent_for(
        self, depth: int, centred: F32, raw: F32, child_id: str, max_concepts: int, changes: list[ConceptChange]
    ) -> str | None:
        level = self.levels[depth]
        sims = level.similarities(unit_row(centred))
        if len(sims):
            best = int(np.argmax(sims))
            if sims[best] > self.thresholds[depth]:
                self._absorb(depth, best, centred, raw, changes)
                return level.ids[best]
        if len(level) >= max_concepts:
            return None
        return self._found(depth, centred, raw, child_id, max_concepts, changes)

    def _change(self, depth: int, row: int, *, founded: bool) -> ConceptChange:
        level = self.levels[depth]
        return ConceptChange(
            concept_id=level.ids[row],
            level=depth,
            count=level.counts[row],
            parent_id=level.parents[row],
            founder=level.founders[row],
            vector=level.raw_unit(row),
            founded=founded,
        )

    def level_of(self, concept_id: str) -> int | None:
        for depth, level in enumerate(self.levels):
            if concept_id in level.rows:
                return depth
        return None

    def to_dict(self) -> dict[str, Any]:
        return self.head_dict() | {"levels": [lv.to_dict() for lv in self.levels]}

    def head_dict(self) -> dict[str, Any]:
        """Everything but the levels' concepts."""
        return {
            "dim": self.dim,
            "thresholds": list(self.thresholds),
            "mean_sum": _b64(self.mean_sum[None, :], "<f8"),
            "seen": self.seen,
            "centred": self.centred,
        }

    @classmethod
    def from_dict(cls, key: str, data: dict[str, Any]) -> Atlas:
        dim = int(data["dim"])
        return cls.from_levels(key, data, [ConceptLevel.from_dict(dim, lv) for lv in data["levels"]])

    @classmethod
    def from_levels(cls, key: str, data: dict[str, Any], levels: list[ConceptLevel]) -> Atlas:
        """The Atlas of ``head_dict``'s form with these levels."""
        thresholds = tuple(float(t) for t in data["thresholds"])
        atlas = cls(key, int(data["dim"]), thresholds, centred=bool(data["centred"]))
        atlas.levels = levels
        atlas.mean_sum = _unb64(data["mean_sum"], atlas.dim, "<f8")[0].astype(np.float64)
        atlas.seen = int(data["seen"])
        for level in atlas.levels:
            for cid, parent in zip(level.ids, level.parents, strict=True):
                if parent is not None:
                    atlas.children.setdefault(parent, []).append(cid)
        return atlas
