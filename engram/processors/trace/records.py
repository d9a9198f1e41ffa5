"""A user's Trace state as table records, in parts: what a batch changed is written, not the whole state.

One record per user held every session kept (up to ``max_sessions``) and every Atlas concept (two
float32 sums, about 2.7 KB of base64 each), and every batch that touched the user rewrote and
changelogged all of it, so the bytes and the CPU a turn cost grew with the user's history. The
state is kept in parts instead, each a key of the trace table:
- ``s/<session id>``: one session's order (``SessionOrder.to_dict``), written when a turn came to it;
- ``a<level>/<row>``: one concept of an Atlas level, written when it changed (a turn changes at
  most one concept of each level: the one it joins or founds);
- the head, key ``<user>``: everything else (the tool calls awaiting results, the Atlas's running
  mean and level sizes, the sessions in least-recently-used order) and the slot of each part (a
  level's as one character per row).
Parts are double-buffered as the dream step's are (processors/dreaming/records.py):
``<user>\\x00<part>/<slot>``, slot 0 or 1. A write puts the changed parts in their other slot,
then the head that names them, then deletes the slots they left and the parts of forgotten
sessions. A crash in between leaves a head that names only whole parts written before it, so the
batch comes again to exactly the state of before it.
A head with ``"version": 1`` is the older whole record: it is read as such, and every part is
written at the next write.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.processors.trace.atlas import Atlas, ConceptLevel
from engram.processors.trace.state import SessionOrder, TraceState, head_from_dict, state_from_dict, state_to_dict

VERSION: Final = 2

Record = dict[str, Any]


class TraceRecordError(ValueError):
    """A head names a part the table does not hold, or has a version this code does not read."""


def part_key(user: str, part: str, slot: int) -> str:
    return f"{user}\x00{part}/{slot}"


def session_part(session_id: str) -> str:
    return f"s/{session_id}"


def atlas_part(level: int, row: int) -> str:
    return f"a{level}/{row}"


def trace_records(state: TraceState) -> list[tuple[str, Record | None]]:
    """(key, record) of every part the state changed since its last write, in its free slot; then
    the head; then (key, None) for each slot left and each forgotten session's part. The changes
    are then taken as written."""
    user = state.key
    changed = {session_part(s): state.sessions[s].to_dict() for s in sorted(state.touched)}
    for depth, level in enumerate(state.atlas.levels if state.atlas is not None else []):
        for row in sorted(level.dirty):
            changed[atlas_part(depth, row)] = level.rows_dict(row, row + 1)
        level.dirty.clear()
    left = {part: state.slots[part] for part in changed if part in state.slots}
    state.slots |= {part: 1 - left.get(part, 1) for part in changed}
    gone = {part: state.slots.pop(part) for part in map(session_part, sorted(state.forgotten)) if part in state.slots}
    out: list[tuple[str, Record | None]] = [(part_key(user, p, state.slots[p]), r) for p, r in changed.items()]
    out.append((user, _head(state)))
    out.extend((part_key(user, part, slot), None) for part, slot in (left | gone).items())
    state.touched.clear()
    state.forgotten.clear()
    return out


def _head(state: TraceState) -> Record:
    sessions = {part: slot for part, slot in state.slots.items() if part.startswith("s/")}
    levels = state.atlas.levels if state.atlas is not None else []
    rows = ["".join(str(state.slots[atlas_part(d, row)]) for row in range(len(lv))) for d, lv in enumerate(levels)]
    parts = {"version": VERSION, "sessions": list(state.sessions), "slots": sessions, "atlas_slots": rows}
    return state_to_dict(state, whole=False) | parts


def read_trace_state(user: str, states: Mapping[str, Record]) -> TraceState | None:
    """The user's Trace state as the table holds it (None: nothing yet)."""
    head = states.get(user)
    if not head:
        return None
    if head.get("version") == 1:  # the older whole record: write every part next time
        state = state_from_dict(head)
        state.touch_all()
        return state
    if head.get("version") != VERSION:
        msg = f"unsupported Trace state version {head.get('version')!r} for {user!r}"
        raise TraceRecordError(msg)
    slots = {str(p): int(s) for p, s in head["slots"].items()}
    for depth, rows in enumerate(head["atlas_slots"]):
        slots |= {atlas_part(depth, row): int(slot) for row, slot in enumerate(rows)}

    def part(name: str) -> Record:
        found = states.get(part_key(user, name, slots.get(name, -1)))
        if found is None:
            msg = f"the Trace state of {user!r} names part {name!r}, which the table does not hold"
            raise TraceRecordError(msg)
        return found

    state = head_from_dict(head)
    state.sessions = {str(s): SessionOrder.from_dict(part(session_part(str(s)))) for s in head["sessions"]}
    atlas = head["atlas"]
    if atlas is not None:
        dim = int(atlas["dim"])
        levels = [
            ConceptLevel.from_parts(dim, [part(atlas_part(depth, row)) for row in range(size)])
            for depth, size in enumerate(atlas["sizes"])
        ]
        state.atlas = Atlas.from_header(user, atlas, levels)
    state.slots = slots
    return state


def trace_erased(user: str, states: Mapping[str, Record]) -> list[str]:
    """The keys an erasure of the user deletes: the head and the slot of each part it names."""
    head = states.get(user) or {}
    sessions = [part_key(user, part, int(slot)) for part, slot in head.get("slots", {}).items()]
    rows = head.get("atlas_slots", [])
    atlas = [part_key(user, atlas_part(d, r), int(s)) for d, level in enumerate(rows) for r, s in enumerate(level)]
    return [user, *sessions, *atlas]


def held_trace(states: Mapping[str, Any]) -> dict[str, Any]:
    """What a trace table holds, independent of how it was written: each user's state whole
    (``state_to_dict``) at its head's key, and no parts (their slots depend on the writes)."""
    out: dict[str, Any] = {}
    for key, record in states.items():
        if "\x00" in key:
            continue
        state = read_trace_state(key, states) if record else None
        out[key] = state_to_dict(state) if state is not None else record
    return out
