"""All SLB buffers of a worker, keyed by (user, session, authorization set), plus per-user memory epochs.

The epoch of a user counts the memory events seen for that user; entries remember the epoch they
were filled at and expire `max_age_events` later (`SlbConfig`). `remove_nodes` drops entries that
point at removed nodes in every buffer. The whole table round-trips through a JSON-able dict.

Epochs survive a restart. A worker keeps each buffer under its `slb_key` and each user's epoch under
`epoch_key` (same table, same user prefix, so an erasure drops both). A restarted worker calls
`restore_epoch` with the stored state before it counts any new event of that user or serves one of
the user's buffers: stored + counted so far. Without it the epoch restarted at 0 and a restored
entry filled at epoch 5,000 looked fresh for 5,256 more events. Replaying memory the view had
applied before the restart counts those events again: entries then expire early, never late.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from engram.processors.rebac import Viewer, slb_key, slb_user_prefix
from engram.processors.slb.buffer import LookasideBuffer, _int
from engram.processors.slb.config import SlbConfig
from engram.schemas.records import Layer

EPOCH_SUFFIX = "epoch"  # no `slb_key` ends its user prefix with this alone: a buffer key has 3 more parts


def epoch_key(user_id: str) -> str:
    """Where a user's epoch is kept beside the user's buffers (see `slb_key`)."""
    return slb_user_prefix(user_id) + EPOCH_SUFFIX


class LookasideTable:
    def __init__(self, config: SlbConfig) -> None:
        self.config = config
        self.buffers: dict[str, LookasideBuffer] = {}
        self.epochs: dict[str, int] = {}
        self.restored: set[str] = set()  # users whose stored epoch has been added in (`restore_epoch`)

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

    def needs_epoch(self, user_id: str) -> bool:
        """Whether the user's stored epoch has yet to be read back (once per user per start)."""
        return user_id not in self.restored

    def restore_epoch(self, user_id: str, state: Mapping[str, object] | None) -> int:
        """Add the epoch a previous run stored (``epoch_state``; None: nothing stored) to what this
        run counted, once per user; returns the user's epoch."""
        if user_id not in self.restored:
            stored = 0 if state is None else _int(state.get("epoch", 0))
            self.epochs[user_id] = stored + self.epoch(user_id)
            self.restored.add(user_id)
        return self.epoch(user_id)

    def epoch_state(self, user_id: str) -> dict[str, object]:
        """What to store under `epoch_key` for the user."""
        return {"epoch": self.epoch(user_id)}

    def forget_user(self, user_id: str) -> list[str]:
        """Drop every buffer of ``user_id`` (any session, any authorization set) and its epoch, on
        erasure; returns the dropped buffers' keys."""
        prefix = slb_user_prefix(user_id)
        dropped = [key for key in self.buffers if key.startswith(prefix)]
        for key in dropped:
            del self.buffers[key]
        self.epochs.pop(user_id, None)
        self.restored.discard(user_id)
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
        table.restored = set(table.epochs)
        return table
