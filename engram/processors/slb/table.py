"""All SLB buffers of a worker, keyed by (user, session, authorization set), plus per-user memory epochs.

The epoch of a user counts the memory events seen for that user; entries remember the epoch they
were filled at and expire `max_age_events` later (`SlbConfig`). `remove_nodes` drops entries that
point at removed nodes in every buffer. The whole table round-trips through a JSON-able dict.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from engram.processors.rebac import Viewer, slb_key, slb_user_prefix
from engram.processors.slb.buffer import LookasideBuffer, _int
from engram.processors.slb.config import SlbConfig
from engram.schemas.records import Layer


class LookasideTable:
    def __init__(self, config: SlbConfig) -> None:
        self.config = config
        self.buffers: dict[str, LookasideBuffer] = {}
        self.epochs: dict[str, int] = {}

    def buffer(self, viewer: Viewer, session_id: str, layers: Iterable[Layer], dim: int) -> LookasideBuffer:
        """The buffer of this principal, session *and* authorization set (created empty on first use)."""
        key = slb_key(viewer, session_id, layers)
        found = self.buffers.get(key)
        if found is None or found.dim != dim:
            found = LookasideBuffer(dim, self.config)
            self.buffers[key] = found
        return found

    def epoch(self, user_id: str) -> int:
        return self.epochs.get(user_id, 0)

    def note_memory_events(self, user_id: str, count: int = 1) -> int:
        """Advance the user's epoch by `count` new memory events; returns the new epoch."""
        self.epochs[user_id] = self.epoch(user_id) + count
        return self.epochs[user_id]

    def forget_user(self, user_id: str) -> list[str]:
        """Drop every buffer of ``user_id`` (any session, any authorization set) and its epoch, on
        erasure; returns the dropped buffers' keys."""
        prefix = slb_user_prefix(user_id)
        dropped = [key for key in self.buffers if key.startswith(prefix)]
        for key in dropped:
            del self.buffers[key]
        self.epochs.pop(user_id, None)
        return dropped

    def remove_nodes(self, node_ids: Collection[str]) -> int:
        return sum(buffer.invalidate_nodes(node_ids) for buffer in self.buffers.values())

    def to_state(self) -> dict[str, object]:
        return {
            "buffers": {key: buffer.to_state() for key, buffer in sorted(self.buffers.items())},
            "epochs": dict(sorted(self.epochs.items())),
        }

    @classmethod
    def from_state(cls, state: dict[str, object], config: SlbConfig) -> LookasideTable:
        table = cls(config)
        buffers = state.get("buffers", {})
        epochs = state.get("epochs", {})
        if not isinstance(buffers, dict) or not isinstance(epochs, dict):
            msg = "SLB table state needs dicts under 'buffers' and 'epochs'"
            raise TypeError(msg)
        for key, value in buffers.items():
            if isinstance(value, dict):
                table.buffers[str(key)] = LookasideBuffer.from_state(value, config)
        table.epochs = {str(user): _int(epoch) for user, epoch in epochs.items()}
        return table
