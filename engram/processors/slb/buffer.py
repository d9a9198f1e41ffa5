"""The Semantic Lookaside Buffer (seed 000 §3.4, Algorithm 1), one per (session, authorization set).

A buffer holds at most K entries. Each entry is a centroid (the L2-normalized query embedding that
filled it), the cached neighbourhood (candidate node ids and their scores from the global search),
the Atlas concept that anchors it, and LRU metadata. LRU is a logical clock that ticks on every
lookup hit and insert (never wall time), so replaying the same requests gives the same state.

`lookup` is O(K·d): one (K, d) @ (d,) product. A hit (best similarity > τ_hit) returns the entry;
the caller re-scores its neighbourhood against the new query (see `rescore`). A miss leaves the
caller to search globally and `insert` the result, evicting the least recently used entry.

State is a JSON-able dict (`to_state` / `from_state`) for a Faust table. Its numbers arrays
(centroid, scores) are stored as base64 of their little-endian bytes, exact and compact: the worker
writes a buffer's state after every miss, and JSON floats made that write cost more than the
compile's global search (measured with py-spy in `engram bench compile`: 1.9 ms for a 6-entry
buffer as float lists). States written as plain lists still load.
"""

from __future__ import annotations

import base64
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from engram.processors.slb.config import SlbConfig
from engram.processors.slb.local import ScoringLayout

Vector = npt.NDArray[np.float32]


@dataclass(slots=True)
class SlbEntry:
    entry_id: int
    centroid: Vector
    node_ids: tuple[str, ...]
    scores: tuple[float, ...]
    anchor_id: str | None
    last_used: int
    created_epoch: int
    hits: int = 0
    # Derived, never persisted: the neighbourhood laid out for scoring (see `local.py`).
    layout: ScoringLayout | None = field(default=None, repr=False, compare=False)

    def to_state(self) -> dict[str, object]:
        return {
            "entry_id": self.entry_id,
            "centroid": _packed(self.centroid, "<f4"),
            "node_ids": list(self.node_ids),
            "scores": _packed(np.asarray(self.scores, dtype=np.float64), "<f8"),
            "anchor_id": self.anchor_id,
            "last_used": self.last_used,
            "created_epoch": self.created_epoch,
            "hits": self.hits,
        }

    @classmethod
    def from_state(cls, state: dict[str, object]) -> SlbEntry:
        return cls(
            entry_id=_int(state["entry_id"]),
            centroid=_unpacked(state["centroid"], "<f4").astype(np.float32),
            node_ids=tuple(str(x) for x in _list(state["node_ids"])),
            scores=tuple(float(x) for x in _unpacked(state["scores"], "<f8")),
            anchor_id=None if state["anchor_id"] is None else str(state["anchor_id"]),
            last_used=_int(state["last_used"]),
            created_epoch=_int(state["created_epoch"]),
            hits=_int(state["hits"]),
        )


@dataclass(frozen=True, slots=True)
class SlbLookup:
    hit: bool
    similarity: float
    entry: SlbEntry | None


def _int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"expected an int in SLB state, got {value!r}"
        raise TypeError(msg)
    return value


def _float(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        msg = f"expected a number in SLB state, got {value!r}"
        raise TypeError(msg)
    return float(value)


def _packed(values: npt.NDArray[np.floating], dtype: str) -> str:
    return base64.b64encode(np.ascontiguousarray(values, dtype=dtype).tobytes()).decode("ascii")


def _unpacked(value: object, dtype: str) -> npt.NDArray[np.float64]:
    """An array from its packed form, or from a plain list of numbers (states written before)."""
    if isinstance(value, str):
        try:
            raw = base64.b64decode(value.encode("ascii"), validate=True)
            return np.frombuffer(raw, dtype=dtype).astype(np.float64)
        except ValueError as exc:  # binascii.Error and a length that is not a whole number of items
            msg = f"expected a packed {dtype} array in SLB state: {exc}"
            raise TypeError(msg) from exc
    return np.asarray([_float(x) for x in _list(value)], dtype=np.float64)


def _list(value: object) -> list[object]:
    if not isinstance(value, list):
        msg = f"expected a list in SLB state, got {type(value).__name__}"
        raise TypeError(msg)
    return value


def _normalized(vector: Vector) -> Vector:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


class LookasideBuffer:
    """K centroids with their cached neighbourhoods and deterministic LRU."""

    def __init__(self, dim: int, config: SlbConfig) -> None:
        self.dim = dim
        self.config = config
        self.clock = 0
        self.next_entry_id = 0
        self.entries: list[SlbEntry] = []
        self._matrix: Vector | None = None

    def __len__(self) -> int:
        return len(self.entries)

    def _centroids(self) -> Vector:
        if self._matrix is None:
            self._matrix = (
                np.stack([e.centroid for e in self.entries]).astype(np.float32)
                if self.entries
                else np.zeros((0, self.dim), dtype=np.float32)
            )
        return self._matrix

    def _changed(self) -> None:
        self._matrix = None

    def lookup(self, query: Vector, epoch: int) -> SlbLookup:
        """Best centroid by cosine; a hit touches the entry's LRU clock. Expires stale entries first."""
        self.expire(epoch)
        if not self.entries:
            return SlbLookup(False, -1.0, None)
        sims = np.vecdot(self._centroids(), _normalized(query))  # not a BLAS gemv: no threads to wake
        best = int(np.argmax(sims))
        similarity = float(sims[best])
        if similarity > self.config.tau_hit:
            entry = self.entries[best]
            self.clock += 1
            entry.last_used = self.clock
            entry.hits += 1
            return SlbLookup(True, similarity, entry)
        return SlbLookup(False, similarity, None)

    def insert(
        self, query: Vector, node_ids: Sequence[str], scores: Sequence[float], anchor_id: str | None, epoch: int
    ) -> SlbEntry:
        """Cache a global search result under the query's centroid, evicting the LRU entry if full."""
        size = self.config.neighbourhood_size
        self.clock += 1
        entry = SlbEntry(
            entry_id=self.next_entry_id,
            centroid=_normalized(query),
            node_ids=tuple(node_ids[:size]),
            scores=tuple(float(s) for s in scores[:size]),
            anchor_id=anchor_id,
            last_used=self.clock,
            created_epoch=epoch,
        )
        self.next_entry_id += 1
        if len(self.entries) >= self.config.capacity:
            victim = min(self.entries, key=lambda e: (e.last_used, e.entry_id))
            self.entries.remove(victim)
        self.entries.append(entry)
        self._changed()
        return entry

    def stage(self, entry: SlbEntry, node_ids: Iterable[str], score: float) -> int:
        """Add prefetched node ids (e.g. Atlas children) to an entry's neighbourhood; returns how many."""
        known = set(entry.node_ids)
        fresh = [n for n in node_ids if n not in known]
        if fresh:
            entry.node_ids = entry.node_ids + tuple(fresh)
            entry.scores = entry.scores + (score,) * len(fresh)
            entry.layout = None
        return len(fresh)

    def drop(self, entry: SlbEntry) -> None:
        """Forget one entry (a hit whose neighbourhood no longer holds, see `serves_now`)."""
        self._keep([e for e in self.entries if e.entry_id != entry.entry_id])

    def expire(self, epoch: int) -> int:
        """Drop entries older than `max_age_events` memory events of the user."""
        keep = [e for e in self.entries if epoch - e.created_epoch <= self.config.max_age_events]
        return self._keep(keep)

    def invalidate_nodes(self, removed: Collection[str]) -> int:
        """Drop every entry that points at a removed node; returns how many were dropped."""
        gone = set(removed)
        keep = [e for e in self.entries if gone.isdisjoint(e.node_ids) and e.anchor_id not in gone]
        return self._keep(keep)

    def _keep(self, keep: list[SlbEntry]) -> int:
        dropped = len(self.entries) - len(keep)
        if dropped:
            self.entries = keep
            self._changed()
        return dropped

    def to_state(self) -> dict[str, object]:
        return {
            "dim": self.dim,
            "clock": self.clock,
            "next_entry_id": self.next_entry_id,
            "entries": [e.to_state() for e in self.entries],
        }

    @classmethod
    def from_state(cls, state: dict[str, object], config: SlbConfig) -> LookasideBuffer:
        buffer = cls(_int(state["dim"]), config)
        buffer.clock = _int(state["clock"])
        buffer.next_entry_id = _int(state["next_entry_id"])
        entries = _list(state["entries"])
        buffer.entries = [SlbEntry.from_state(e) for e in entries if isinstance(e, dict)]
        return buffer
