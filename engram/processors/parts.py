"""A large keyed state kept as a head and double-buffered parts, each a key of the step's table.

A state written whole on every batch that touches its key costs what its history weighs, in CPU,
in changelog bytes and in the broker's memory. Kept in parts, a batch writes the parts it changed
and a small head that names them. A part is double-buffered: ``<owner>\\x00<part>/<slot>``, slot 0
or 1. A write puts each changed part in its other slot, then the head that names the new slots,
then deletes slots left behind, all at the owner's partition in that order. A crash in between
leaves a head that names only parts written before it, whole: the batch comes again to exactly
the state of before it (the old slots are intact), and a slot left over is overwritten by the
next write of its part.

The slot a part leaves is not deleted at once: a part that changes on every batch (the newest
chunk of episodes, the session being written) would cost a delete record each time for a slot
its next write overwrites anyway. The head lists such parts as ``stale``, and a write deletes the
left slot of each stale part it does not change: once the part has stopped changing (measured
with `engram bench ingest --users 1000`: the deletes were a third of the state tables' records).

Used by the dream memory (processors/dreaming/records.py) and the Trace state
(processors/trace/records.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

Record = dict[str, Any]
Write = tuple[str, Record]


def part_key(owner: str, part: str, slot: int) -> str:
    """The table key of one slot of one part of ``owner``'s state."""
    return f"{owner}\x00{part}/{slot}"


def is_part_key(key: str) -> bool:
    """A part's key (a separator after the first character; a head's key has none there)."""
    return key.find("\x00", 1) >= 0


def both_slots(owner: str, parts: Iterable[str]) -> list[str]:
    """The keys of both slots of each part: what deleting the parts (an erasure) deletes."""
    return [part_key(owner, part, slot) for part in parts for slot in (0, 1)]


def stale_parts(head: Mapping[str, Any], slots: Mapping[str, int]) -> set[str]:
    """The ``stale`` parts a head lists that it still names (a head written before there were
    none: every left slot was deleted at once)."""
    return {str(part) for part in head.get("stale", ()) if part in slots}


def flip(
    owner: str, changed: Mapping[str, Record], slots: dict[str, int], stale: set[str]
) -> tuple[list[Write], list[str]]:
    """The writes of the ``changed`` parts, each in its free slot, and the keys to delete after the
    head: the left slot of each ``stale`` part this write does not change. ``slots`` (part -> slot
    the head names) and ``stale`` (the parts whose other slot holds an older copy) are updated in
    place. A part gone from ``slots`` leaves ``stale`` too: whoever dropped it deletes both slots."""
    cooled = sorted(part for part in stale if part not in changed and part in slots)
    deletes = [part_key(owner, part, 1 - slots[part]) for part in cooled]
    stale.intersection_update(part for part in slots if part not in cooled)
    left = {part: slots[part] for part in changed if part in slots}
    for part in changed:
        slots[part] = 1 - left.get(part, 1)
    stale.update(left)
    return [(part_key(owner, part, slots[part]), record) for part, record in changed.items()], deletes
