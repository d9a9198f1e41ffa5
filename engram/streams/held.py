"""The states a keyed step last wrote, kept in hand so the next batch need not parse them again.

A step whose state is large (a user's dream memory, a user's Trace) keeps the state object it
wrote with the record object it wrote for it (the head, for a state stored in parts). While the
table still holds that very record object, the next batch goes on from the state in hand; any other
record (another worker wrote the key, a batch was not committed, a restart) is parsed. A state is
taken out while a batch works on it and put back only once the batch has made its writes, so a
batch that fails leaves nothing half-applied behind.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from engram.streams.commit import JsonState

S = TypeVar("S")


@dataclass
class HeldStates(Generic[S]):
    """At most ``size`` keys' states, least recently used out."""

    size: int = 4096  # the worker's ENGRAM_HELD_STATES (streams/config.py)
    _entries: OrderedDict[str, tuple[JsonState, S]] = field(default_factory=OrderedDict)

    def take(self, key: str, record: JsonState | None) -> S | None:
        """The state written as ``record`` (the very object the table holds), or None."""
        entry = self._entries.pop(key, None)
        return entry[1] if entry is not None and record is not None and entry[0] is record else None

    def put(self, key: str, record: JsonState, state: S) -> None:
        self._entries[key] = (record, state)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)
