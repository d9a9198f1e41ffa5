"""Per-key Trace state (one user; it lives in a Faust table) and its JSON-able form.

- ``SessionOrder``: the turns of one session sorted by ``(turn_index, node_id)``, with their role
  code and content digest, so NEXT stays a gap-free total order and duplicates are recognised.
- ``TraceState``: the sessions, the tool calls awaiting results (and results awaiting calls), and
  the user's ``Atlas``. ``state_to_dict`` / ``state_from_dict`` round-trip it exactly, whole; the
  Trace step writes it in parts, what changed only (``processors/trace/records.py``).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from engram.processors.trace.atlas import Atlas

STATE_VERSION: Final = 1

# Role codes kept per turn: "a" is an assistant turn whose CAUSAL parent is derived (the user turn
# it answers); "x" an assistant turn with explicit causal parents (nothing is derived for it).
USER, ASSISTANT, ASSISTANT_EXPLICIT, TOOL, SYSTEM = "u", "a", "x", "t", "s"


class SessionOrder:
    """Turns of one session in NEXT order; bounded to the newest ``capacity`` turns."""

    def __init__(self) -> None:
        self.keys: list[tuple[int, str]] = []
        self.roles: dict[str, str] = {}
        self.digests: dict[tuple[int, str], str] = {}
        self.digest_of: dict[str, tuple[int, str]] = {}
        self.evicted_up_to: tuple[int, str] | None = None
        self._as_dict: dict[str, Any] | None = None  # ``to_dict`` since the last change
        self.part: str | None = None  # its table part once written (processors/trace/records.py)
        self.dirty = True  # changed since it was last written

    def __len__(self) -> int:
        return len(self.keys)

    def is_duplicate(self, node_id: str, index: int, digest: str) -> bool:
        return node_id in self.roles or (index, digest) in self.digests

    def is_before_window(self, key: tuple[int, str]) -> bool:
        return self.evicted_up_to is not None and key <= self.evicted_up_to

    def insert(self, key: tuple[int, str], role: str, digest: str) -> int:
        self._as_dict, self.dirty = None, True
        pos = bisect.bisect_left(self.keys, key)
        self.keys.insert(pos, key)
        self.roles[key[1]] = role
        self.digests[(key[0], digest)] = key[1]
        self.digest_of[key[1]] = (key[0], digest)
        return pos

    def evict(self, capacity: int) -> None:
        while len(self.keys) > capacity:
            self._as_dict, self.dirty = None, True
            key = self.keys.pop(0)
            self.roles.pop(key[1], None)
            self.digests.pop(self.digest_of.pop(key[1], (0, "")), None)
            self.evicted_up_to = key

    def neighbours(self, pos: int) -> tuple[str | None, str | None]:
        prev = self.keys[pos - 1][1] if pos > 0 else None
        nxt = self.keys[pos + 1][1] if pos + 1 < len(self.keys) else None
        return prev, nxt

    def user_before(self, pos: int, lookback: int) -> str | None:
        """The nearest user turn before position ``pos``, within ``lookback`` turns."""
        for i in range(pos - 1, max(-1, pos - 1 - lookback), -1):
            node = self.keys[i][1]
            if self.roles[node] == USER:
                return node
        return None

    def answers_after(self, pos: int) -> Iterator[str]:
        """Assistant turns (derived-parent ones) after ``pos`` up to the next user turn."""
        for i in range(pos + 1, len(self.keys)):
            node = self.keys[i][1]
            role = self.roles[node]
            if role == USER:
                return
            if role == ASSISTANT:
                yield node

    def to_dict(self) -> dict[str, Any]:
        """The JSON form; the same object until the order changes (a user's state is written every
        batch, and most of its sessions are not the one the batch came to). Not to be mutated."""
        if self._as_dict is None:
            turns = [[idx, node, self.roles[node], self.digest_of.get(node, (0, ""))[1]] for idx, node in self.keys]
            evicted = None if self.evicted_up_to is None else list(self.evicted_up_to)
            self._as_dict = {"turns": turns, "evicted_up_to": evicted}
        return self._as_dict

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> SessionOrder:
        order = cls()
        for idx, node, role, digest in data["turns"]:
            order.keys.append((int(idx), str(node)))
            order.roles[str(node)] = str(role)
            if digest:
                order.digests[(int(idx), str(digest))] = str(node)
                order.digest_of[str(node)] = (int(idx), str(digest))
        evicted = data.get("evicted_up_to")
        order.evicted_up_to = None if evicted is None else (int(evicted[0]), str(evicted[1]))
        order.dirty = False
        return order


class TraceState:
    """Everything the Trace remembers about one key (a user)."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.sessions: dict[str, SessionOrder] = {}
        self.calls: dict[str, str] = {}  # tool call_id -> node id of the turn that made the call
        self.early_results: dict[str, list[str]] = {}  # call_id -> tool-result nodes seen before the call
        self.calls_dirty = False  # ``calls`` or ``early_results`` changed since they were last written
        self.atlas: Atlas | None = None
        # How the state is written in parts (processors/trace/records.py): the slot of each part
        # written, the number of the next session part, and the parts of forgotten sessions.
        self.slots: dict[str, int] = {}
        self.stale: set[str] = set()  # parts whose other slot holds an older copy (processors/parts.py)
        self.serial = 0
        self.retired: list[str] = []

    def session(self, session_id: str, max_sessions: int | None = None) -> SessionOrder:
        """The session's order, marked most recently used; beyond ``max_sessions`` the least
        recently used session is forgotten (a turn arriving for it later starts a new chain)."""
        order = self.sessions.pop(session_id, None)
        if order is None:
            order = SessionOrder()
        self.sessions[session_id] = order
        while max_sessions is not None and len(self.sessions) > max_sessions:
            forgotten = self.sessions.pop(next(iter(self.sessions)))
            if forgotten.part is not None:
                self.retired.append(forgotten.part)
        return order

    def atlas_for(self, dim: int, thresholds: tuple[float, ...], *, centred: bool = True) -> Atlas:
        if self.atlas is None:
            self.atlas = Atlas(self.key, dim, thresholds, centred=centred)
        return self.atlas

    def atlas_children(self, concept_id: str) -> list[str]:
        """Child concepts of ``concept_id`` one Atlas level down, in founding order (the SLB prefetch)."""
        if self.atlas is None:
            return []
        return list(self.atlas.children.get(concept_id, ()))

    def atlas_parent(self, concept_id: str) -> str | None:
        if self.atlas is None:
            return None
        depth = self.atlas.level_of(concept_id)
        if depth is None:
            return None
        level = self.atlas.levels[depth]
        return level.parents[level.rows[concept_id]]

    def concepts(self, level: int = 0) -> tuple[list[str], npt.NDArray[np.float32]]:
        """Concept ids of one Atlas level and their unit centroids (n, dim), in the embedder's space
        (comparable with query embeddings; membership itself is decided in the centred space)."""
        if self.atlas is None or level >= len(self.atlas.levels):
            return [], np.zeros((0, 0), dtype=np.float32)
        lv = self.atlas.levels[level]
        return list(lv.ids), lv.raw_units()


def state_to_dict(state: TraceState) -> dict[str, Any]:
    """A JSON-able dict (strings, numbers, lists, dicts) that ``state_from_dict`` restores exactly."""
    return {
        "version": STATE_VERSION,
        "key": state.key,
        "sessions": {sid: order.to_dict() for sid, order in state.sessions.items()},
        "calls": [[call, node] for call, node in state.calls.items()],
        "early_results": [[call, list(nodes)] for call, nodes in state.early_results.items()],
        "atlas": None if state.atlas is None else state.atlas.to_dict(),
    }


def state_from_dict(data: dict[str, Any]) -> TraceState:
    if data.get("version") != STATE_VERSION:
        msg = f"unsupported Trace state version {data.get('version')!r}"
        raise ValueError(msg)
    state = TraceState(str(data["key"]))
    state.sessions = {str(sid): SessionOrder.from_dict(order) for sid, order in data["sessions"].items()}
    state.calls = {str(call): str(node) for call, node in data["calls"]}
    state.early_results = {str(call): [str(n) for n in nodes] for call, nodes in data["early_results"]}
    atlas = data.get("atlas")
    state.atlas = None if atlas is None else Atlas.from_dict(state.key, atlas)
    return state
