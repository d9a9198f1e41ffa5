"""A user's Trace state in table parts (processors/trace/records.py): a batch writes the sessions
and concepts it changed, in their free slots, then the head, then deletes the slots they left; the
bytes a batch writes do not grow with the user's history; a crash between the parts and the head,
a state of before the parts, a forgotten session and an erasure all end as a clean run does."""

from __future__ import annotations

import json
from typing import Any

import pytest

from engram.benchmarks.ingest import make_turns, texts
from engram.processors.parts import is_part_key, part_key
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.records import MissingPartError, erased, held, read_state, row_part
from engram.processors.trace.state import state_to_dict
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import group_by_key
from engram.streams.steps import TraceStep
from tests.trace.conftest import LOCOMO_DIR
from tests.trace.test_held import CONFIG, Table, apply, batch, inputs

Turns = list[Record[ConversationTurn]]


def run(records: Turns, size: int, table: Table | None = None) -> tuple[list[MemoryEvent], Table]:
    """Batches of ``size`` through one step; the table as the step left it."""
    step, table = TraceStep(TraceBuilder(CONFIG)), {} if table is None else table
    events: list[MemoryEvent] = []
    for start in range(0, len(records), size):
        events += batch(step, table, records[start : start + size])
    return events, table


def own(table: Table, user: str) -> dict[str, Any]:
    return {k: v for k, v in table.items() if k == user or k.startswith(f"{user}\x00")}


def part_of(key: str) -> str:
    return key.split("\x00", 1)[1].rsplit("/", 1)[0]


def test_a_batch_writes_the_parts_it_changed_in_their_free_slots_then_the_head_then_deletes_stale_slots(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    records = [r for r in inputs(locomo_turns) if r.value["user_id"] == "ada"]
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    batch(step, table, records[:100])
    before = json.loads(json.dumps(table))
    writes, _ = step.process(table, group_by_key(step, records[100:104]))
    keys = [w.key for w in writes]
    head = keys.index("ada")
    parts = keys[:head]
    sessions = {r.value["session_id"] for r in records[100:104]}
    assert len([k for k in parts if "\x00s" in k]) == len(sessions)  # the sessions the turns came to, no other
    assert 1 <= len([k for k in parts if "\x00a" in k]) <= 4 * 2  # the concepts they reached (a level each)
    for key in parts:
        assert key not in before  # a free slot: the slot the head names is untouched until the head
    assert all(w.state is None for w in writes[head + 1 :]) and len(writes) <= 2 * head + 1
    for w in writes[head + 1 :]:
        # the slot left by a part that has stopped changing, deleted once the head names the new ones
        assert (
            w.key in before and part_of(w.key) in before["ada"]["stale"] and part_of(w.key) not in map(part_of, parts)
        )
    named = writes[head].state
    assert named is not None and named["v"] == 2
    # a part written again keeps its older copy in the slot its next write overwrites: no delete for it
    assert {part_of(k) for k in parts if k.replace("/0", "/1") in before or k.replace("/1", "/0") in before} <= set(
        named["stale"]
    )
    assert {part_key("ada", part, slot) for _, part, slot in named["sessions"]} >= {k for k in parts if "\x00s" in k}


def test_the_state_read_from_its_parts_is_the_state_the_step_holds(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    for start in range(0, 300, 7):
        batch(step, table, inputs(locomo_turns)[start : start + 7])
    in_hand = step.held.take("ada", table["ada"])
    read = read_state("ada", json.loads(json.dumps(table)))
    assert in_hand is not None and read is not None
    assert state_to_dict(read) == state_to_dict(in_hand)
    assert read.atlas is not None and len(read.atlas.levels[0]) > 5


def test_the_bytes_a_batch_writes_do_not_grow_with_the_users_history() -> None:
    """A user's late batches write what their early ones wrote, though the user's state (sessions
    and concepts) grew: a session's part is its own turns, a concept's part one concept. The
    bench's turns: sessions of 40 turns."""
    turns = [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(make_turns(1200, 1, texts(LOCOMO_DIR)))]
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    sizes: list[int] = []
    for start in range(0, len(turns), 10):
        writes, _ = step.process(table, group_by_key(step, turns[start : start + 10]))
        sizes.append(sum(len(json.dumps(w.state)) for w in writes if w.state is not None))
        apply(table, writes)
    state = read_state(turns[0].value["user_id"], table)
    assert state is not None and state.atlas is not None and len(state.atlas.levels[0]) >= 10
    early, late = sum(sizes[10:30]) / 20, sum(sizes[-20:]) / 20
    whole = len(json.dumps(state_to_dict(state)))
    assert late <= 1.5 * early, (early, late)
    assert late * 3 < whole, (late, whole)  # a batch writes a fraction of the state it keeps


def test_a_batch_whose_parts_were_written_but_not_its_head_comes_again_and_ends_as_a_clean_run(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    records = inputs(locomo_turns, per_user=120)
    events, before = run(records[:100], 10)
    step = TraceStep(TraceBuilder(CONFIG))
    writes, _ = step.process(json.loads(json.dumps(before)), group_by_key(step, records[100:120]))
    head = next(i for i, w in enumerate(writes) if w.key in ("ada", "bob"))
    assert head > 0
    torn = json.loads(json.dumps(before)) | {w.key: w.state for w in writes[:head]}
    rest, mended = run(records[100:], 10, torn)
    whole, clean = run(records, 10)
    assert events + rest == whole
    assert held(mended) == held(clean)
    assert mended == clean  # the same parts in the same slots, nothing left over


def test_a_whole_state_of_before_the_parts_is_read_and_written_back_in_parts(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    records = inputs(locomo_turns, per_user=80)
    events, table = run(records[:120], 12)
    builder = TraceBuilder(CONFIG)
    old = {}
    for user in ("ada", "bob"):
        state = read_state(user, table)
        assert state is not None
        builder.adopt(user, state)
        old[user] = json.loads(json.dumps(builder.dump_state(user)))  # the version 1 record, whole
    assert "v" not in old["ada"] and old["ada"]["version"] == 1
    rest, upgraded = run(records[120:], 12, dict(old))
    whole, clean = run(records, 12)
    assert events + rest == whole
    assert held(upgraded) == held(clean)
    assert upgraded["ada"]["v"] == 2 and any(is_part_key(k) and k.startswith("ada") for k in upgraded)


def test_a_forgotten_sessions_part_is_deleted(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    """CONFIG keeps four sessions a user: the parts of older sessions leave the table."""
    _, table = run(inputs(locomo_turns), 14)
    head = table["ada"]
    assert len(head["sessions"]) == CONFIG.max_sessions and head["serial"] > CONFIG.max_sessions
    session_parts = {k for k in table if k.startswith("ada\x00s")}
    named = {part_key("ada", p, s) for _, p, s in head["sessions"]}
    older = {part_key("ada", p, 1 - s) for _, p, s in head["sessions"] if p in head["stale"]}
    assert named <= session_parts <= named | older  # only the sessions the head names, no forgotten one


def test_an_erasure_deletes_every_part_then_the_head(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    _, table = run(inputs(locomo_turns, per_user=60), 10)
    keys = erased("ada", table)
    assert keys[-1] == "ada" and set(own(table, "ada")) <= set(keys)
    assert part_key("ada", row_part(0, 0), 0) in keys and part_key("ada", row_part(0, 0), 1) in keys
    assert not [k for k in keys if k.startswith("bob")]
    for key in keys[:-1]:  # an erasure stopped before its last delete
        table.pop(key, None)
    with pytest.raises(MissingPartError):
        read_state("ada", table)
    later = [r for r in inputs(locomo_turns, per_user=80)[120:] if r.value["user_id"] == "ada"]
    events, half = run(later, 10, table)  # the step starts the user empty, as after the erasure
    expected, fresh = run(later, 10)
    assert events == expected
    assert own(half, "ada") == own(fresh, "ada")
