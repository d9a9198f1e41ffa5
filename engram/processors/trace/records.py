"""A user's Trace state as table records: what a batch changed is written, not the whole state.

Written whole, a user's state (every session's turn order and the Atlas's concept centroids, two
float32 sums of 256 dims a concept) was rewritten and changelogged on every batch that touched the
user: 31 KB of changelog a turn early in a 300,000-turn run and 73 KB late, through the broker and
into its memory. It is kept in parts instead, each a key of the Trace step's table, double-buffered
(processors/parts.py):
- one part per session, ``s<n>`` (numbered as sessions come; a forgotten session's part is
  deleted), written when a turn of the session came or was evicted;
- one part per Atlas concept, ``a<level>.<row>``, written when the concept absorbed a turn or was
  founded;
- ``calls``: the tool calls awaiting results and the results awaiting calls, written when a tool
  call or an early result came;
- the head, key ``<user>``: the sessions in least recently used order with their parts' slots, the
  slot of each concept's part, and the Atlas's running mean. It is written on every batch and
  bounded (``max_sessions`` sessions, ``max_concepts`` concepts a level).
A head without ``"v"`` is the whole record of before (``state_to_dict``): it is read as such, and
every part is written at the next write, then the head that replaces it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.processors.parts import Record, both_slots, flip, is_part_key, part_key, stale_parts
from engram.processors.trace.atlas import Atlas, ConceptLevel
from engram.processors.trace.state import SessionOrder, TraceState, state_from_dict, state_to_dict

VERSION: Final = 2
CALLS: Final = "calls"


class MissingPartError(LookupError):
    """A head names a part the table does not hold (an erasure stopped between its deletes)."""


def row_part(depth: int, row: int) -> str:
    return f"a{depth}.{row}"


def state_records(state: TraceState) -> list[tuple[str, Record | None]]:
    """(key, record) of every part the state changed since its last write, in its free slot; then
    the head; then (key, None) for each slot left by a part that stopped changing (processors/parts.py)
    and both slots of each forgotten session's part.
    The changes are then taken as written."""
    changed: dict[str, Record] = {}
    for order in state.sessions.values():
        if order.part is None:
            order.part, state.serial, order.dirty = f"s{state.serial}", state.serial + 1, True
        if order.dirty:
            changed[order.part] = order.to_dict()
    if state.calls_dirty:
        changed[CALLS] = _calls(state)
    levels = [] if state.atlas is None else state.atlas.levels
    for depth, level in enumerate(levels):
        changed |= {row_part(depth, row): level.row_dict(row) for row in sorted(level.dirty)}
    for part in state.retired:
        state.slots.pop(part, None)
    written, left = flip(state.key, changed, state.slots, state.stale)
    out: list[tuple[str, Record | None]] = list(written)
    out.append((state.key, _head(state)))
    out.extend((key, None) for key in left)
    out.extend((key, None) for key in both_slots(state.key, state.retired))
    _written(state)
    return out


def read_state(user: str, states: Mapping[str, Record]) -> TraceState | None:
    """The user's state as the table holds it (None: nothing yet). A head that names a part the
    table does not hold raises ``MissingPartError``."""
    head = states.get(user)
    if not head:
        return None
    if "v" not in head:  # the whole record of before the parts: write every part next time
        return _all_dirty(state_from_dict(head))
    try:
        return _from_parts(user, head, states)
    except KeyError as exc:
        msg = f"the Trace state of {user!r} names a part the table does not hold: {exc}"
        raise MissingPartError(msg) from exc


def erased(user: str, states: Mapping[str, Record]) -> list[str]:
    """The keys an erasure of the user deletes: both slots of every part its head names, then the
    head (last: until it is deleted, a retry of the erasure finds the parts again)."""
    head = states.get(user)
    if not head or "v" not in head:
        return [user]
    parts = [part for _, part, _ in head["sessions"]]
    parts += [CALLS] if head["calls"] is not None else []
    atlas = head["atlas"]
    for depth, slots in enumerate(atlas["rows"] if atlas is not None else ()):
        parts += [row_part(depth, row) for row in range(len(slots))]
    return [*both_slots(user, parts), user]


def held(states: Mapping[str, Any]) -> dict[str, Any]:
    """What a Trace table holds, independent of how it was written: each user's state whole
    (``state_to_dict``) at its head's key, and no parts (which slot holds a part depends on the
    history of writes, not on the state)."""
    out: dict[str, Any] = {}
    for key, record in states.items():
        if record is not None and not is_part_key(key):
            state = read_state(key, states)
            out[key] = None if state is None else state_to_dict(state)
    return out


def _head(state: TraceState) -> Record:
    atlas, slots = state.atlas, state.slots
    levels = [] if atlas is None else atlas.levels
    rows = ["".join(str(slots[row_part(depth, row)]) for row in range(len(lv))) for depth, lv in enumerate(levels)]
    return {
        "v": VERSION,
        "key": state.key,
        "serial": state.serial,
        "sessions": [[sid, order.part, slots[str(order.part)]] for sid, order in state.sessions.items()],
        "calls": slots.get(CALLS),
        "atlas": None if atlas is None else atlas.head_dict() | {"rows": rows},
        "stale": sorted(state.stale),
    }


def _calls(state: TraceState) -> Record:
    return {
        "calls": [[call, node] for call, node in state.calls.items()],
        "early_results": [[call, list(nodes)] for call, nodes in state.early_results.items()],
    }


def _written(state: TraceState) -> None:
    for order in state.sessions.values():
        order.dirty = False
    state.calls_dirty = False
    for level in [] if state.atlas is None else state.atlas.levels:
        level.dirty.clear()
    state.retired = []


def _all_dirty(state: TraceState) -> TraceState:
    for order in state.sessions.values():
        order.dirty = True
    state.calls_dirty = bool(state.calls or state.early_results)
    for level in [] if state.atlas is None else state.atlas.levels:
        level.dirty = set(range(len(level)))
    return state


def _from_parts(user: str, head: Record, states: Mapping[str, Record]) -> TraceState:
    state = TraceState(user)
    state.serial = int(head["serial"])
    for sid, part, slot in head["sessions"]:
        order = SessionOrder.from_dict(states[part_key(user, part, slot)])
        order.part = str(part)
        state.sessions[str(sid)] = order
        state.slots[str(part)] = int(slot)
    if head["calls"] is not None:
        state.slots[CALLS] = int(head["calls"])
        calls = states[part_key(user, CALLS, state.slots[CALLS])]
        state.calls = {str(call): str(node) for call, node in calls["calls"]}
        state.early_results = {str(call): [str(n) for n in nodes] for call, nodes in calls["early_results"]}
    atlas = head["atlas"]
    if atlas is not None:
        dim = int(atlas["dim"])
        levels = [_level(state, (depth, dim), slots, states) for depth, slots in enumerate(atlas["rows"])]
        state.atlas = Atlas.from_levels(state.key, atlas, levels)
    state.stale = stale_parts(head, state.slots)
    return state


def _level(state: TraceState, shape: tuple[int, int], slots: str, states: Mapping[str, Record]) -> ConceptLevel:
    """An Atlas level (``shape``: its depth and the embeddings' dimension) from its concepts' parts
    (``slots``: the slot of each row's part)."""
    depth, dim = shape
    rows = []
    for row, slot in enumerate(slots):
        part = row_part(depth, row)
        state.slots[part] = int(slot)
        rows.append(states[part_key(state.key, part, int(slot))])
    return ConceptLevel.from_rows(dim, rows)
