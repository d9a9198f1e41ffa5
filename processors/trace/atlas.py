"""The Atlas: a user's concepts (V_concept), formed online, organised in levels.

Level 0 holds the concepts turns REF. A turn whose best level-0 similarity is > tau_ref REFs that
concept and its centroid absorbs the turn (running mean; the concept id never changes). Otherwise
the turn founds a new concept (id = uuid5 of the user key, level and founding node). A new concept
at level l joins the best level l+1 parent above that level's (lower) threshold, with a CHILD_OF
edge, or founds one itself: the Atlas grows bottom-up, coarser level by coarser level.

Determinism: centroid sums are float64 and updated element-wise in input order; the float32 unit
rows used for similarity are recomputed from the sums one row at a time by the same function, so a
state restored from ``to_dict`` continues bit for bit where the original would have.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from schemas.events import stable_id

F32 = npt.NDArray[np.float32]
F64 = npt.NDArray[np.float64]


def unit_row(total: F64) -> F32:
    norm = float(np.sqrt((total * total).sum()))
    if norm == 0.0:
        return np.zeros(total.shape, dtype=np.float32)
    out: F32 = (total / norm).astype(np.float32)
    return out


@dataclass(frozen=True, slots=True)
class ConceptChange:
    """A concept to (re-)publish: founded (count == 1) or refreshed (count a power of two)."""

    concept_id: str
    level: int
    count: int
    parent_id: str | None
    founder: str
    vector: F32
    founded: bool


class ConceptLevel:
    """Concepts of one Atlas level: ids, member counts, parents, centroid sums (n, dim)."""

    def __init__(self, dim: int, capacity: int = 16) -> None:
        self.dim = dim
        self.ids: list[str] = []
        self.counts: list[int] = []
        self.parents: list[str | None] = []
        self.founders: list[str] = []
        self.rows: dict[str, int] = {}
        self._sums: F64 = np.zeros((capacity, dim), dtype=np.float64)
        self._unit: F32 = np.zeros((capacity, dim), dtype=np.float32)

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def unit(self) -> F32:
        """Unit centroids, shape (n, dim)."""
        return self._unit[: len(self.ids)]

    def similarities(self, vector: F32) -> F32:
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        sims: F32 = self.unit @ vector
        return sims

    def add(self, concept_id: str, vector: F64, founder: str) -> int:
        row = len(self.ids)
        if row == self._sums.shape[0]:
            self._sums = np.concatenate([self._sums, np.zeros_like(self._sums)])
            self._unit = np.concatenate([self._unit, np.zeros_like(self._unit)])
        self.ids.append(concept_id)
        self.counts.append(1)
        self.parents.append(None)
        self.founders.append(founder)
        self.rows[concept_id] = row
        self._sums[row] = vector
        self._unit[row] = unit_row(self._sums[row])
        return row

    def absorb(self, row: int, vector: F64) -> int:
        self._sums[row] += vector
        self._unit[row] = unit_row(self._sums[row])
        self.counts[row] += 1
        return self.counts[row]

    def to_dict(self) -> dict[str, Any]:
        sums = np.ascontiguousarray(self._sums[: len(self.ids)], dtype="<f8")
        return {
            "ids": list(self.ids),
            "counts": list(self.counts),
            "parents": list(self.parents),
            "founders": list(self.founders),
            "sums": base64.b64encode(sums.tobytes()).decode("ascii"),
        }

    @classmethod
    def from_dict(cls, dim: int, data: dict[str, Any]) -> ConceptLevel:
        ids = [str(i) for i in data["ids"]]
        level = cls(dim, capacity=max(16, len(ids)))
        sums = np.frombuffer(base64.b64decode(data["sums"]), dtype="<f8").reshape(len(ids), dim)
        level.ids = ids
        level.counts = [int(c) for c in data["counts"]]
        level.parents = [None if p is None else str(p) for p in data["parents"]]
        level.founders = [str(f) for f in data["founders"]]
        level.rows = {cid: row for row, cid in enumerate(ids)}
        for row in range(len(ids)):
            level._sums[row] = sums[row]
            level._unit[row] = unit_row(level._sums[row])
        return level


class Atlas:
    """All levels of one user's concepts, with the hierarchy (CHILD_OF) between them."""

    def __init__(self, key: str, dim: int, thresholds: tuple[float, ...]) -> None:
        self.key = key
        self.dim = dim
        self.thresholds = thresholds
        self.levels = [ConceptLevel(dim) for _ in thresholds]
        self.children: dict[str, list[str]] = {}

    def place(
        self, vector: F32, founder: str, max_refs: int, max_concepts: int
    ) -> tuple[list[tuple[str, float]], list[ConceptChange]]:
        """REF targets ``[(concept_id, sim)]`` of one turn's vector, and the concepts to publish."""
        level = self.levels[0]
        sims = level.similarities(vector)
        changes: list[ConceptChange] = []
        refs: list[tuple[str, float]] = []
        if len(sims):
            order = [int(np.argmax(sims))] if max_refs == 1 else np.argsort(-sims, kind="stable")[:max_refs]
            refs = [(level.ids[int(r)], round(float(sims[r]), 6)) for r in order if sims[r] > self.thresholds[0]]
        if refs:
            self._absorb(0, level.rows[refs[0][0]], vector.astype(np.float64), changes)
        elif len(level) < max_concepts:
            concept_id = self._found(0, vector.astype(np.float64), founder, max_concepts, changes)
            refs = [(concept_id, 1.0)]
        return refs, changes

    def _absorb(self, depth: int, row: int, vector: F64, changes: list[ConceptChange]) -> None:
        level = self.levels[depth]
        count = level.absorb(row, vector)
        if count & (count - 1) == 0:  # republish the centroid at 2, 4, 8, ... members
            changes.append(self._change(depth, row, founded=False))

    def _found(self, depth: int, vector: F64, founder: str, max_concepts: int, changes: list[ConceptChange]) -> str:
        level = self.levels[depth]
        concept_id = stable_id("concept", self.key, depth, founder)
        row = level.add(concept_id, vector, founder)
        if depth + 1 < len(self.levels):
            level.parents[row] = self._parent_for(depth + 1, vector, concept_id, max_concepts, changes)
            if level.parents[row] is not None:
                self.children.setdefault(str(level.parents[row]), []).append(concept_id)
        changes.insert(0, self._change(depth, row, founded=True))
        return concept_id

    def _parent_for(
        self, depth: int, vector: F64, child_id: str, max_concepts: int, changes: list[ConceptChange]
    ) -> str | None:
        level = self.levels[depth]
        sims = level.similarities(unit_row(vector))
        if len(sims):
            best = int(np.argmax(sims))
            if sims[best] > self.thresholds[depth]:
                self._absorb(depth, best, vector, changes)
                return level.ids[best]
        if len(level) >= max_concepts:
            return None
        return self._found(depth, vector, child_id, max_concepts, changes)

    def _change(self, depth: int, row: int, *, founded: bool) -> ConceptChange:
        level = self.levels[depth]
        return ConceptChange(
            concept_id=level.ids[row],
            level=depth,
            count=level.counts[row],
            parent_id=level.parents[row],
            founder=level.founders[row],
            vector=level.unit[row].copy(),
            founded=founded,
        )

    def level_of(self, concept_id: str) -> int | None:
        for depth, level in enumerate(self.levels):
            if concept_id in level.rows:
                return depth
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"dim": self.dim, "thresholds": list(self.thresholds), "levels": [lv.to_dict() for lv in self.levels]}

    @classmethod
    def from_dict(cls, key: str, data: dict[str, Any]) -> Atlas:
        atlas = cls(key, int(data["dim"]), tuple(float(t) for t in data["thresholds"]))
        atlas.levels = [ConceptLevel.from_dict(atlas.dim, lv) for lv in data["levels"]]
        for level in atlas.levels:
            for cid, parent in zip(level.ids, level.parents, strict=True):
                if parent is not None:
                    atlas.children.setdefault(parent, []).append(cid)
        return atlas
