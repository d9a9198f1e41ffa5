"""The trace step keeps the states it wrote in hand (streams/held.py): batch after batch it derives
the same events and writes the same records as a step that parses its table every batch; a record
it did not write (a restart, another worker, an erasure) is parsed; a failed batch leaves nothing
half-applied in hand."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.config import BALANCED
from engram.processors.trace.records import erased, held
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import StateWrite, group_by_key
from engram.streams.steps import TraceStep

Table = dict[str, Any]
CONFIG = replace(BALANCED, max_sessions=4, max_session_turns=30)  # forgetting and eviction happen below


def inputs(locomo_turns: dict[str, list[ConversationTurn]], per_user: int = 200) -> list[Record[ConversationTurn]]:
    """Two LoCoMo conversations as two users, interleaved, each user's sessions of 24 turns."""
    a, b = (
        [as_user(t, user, i // 24) for i, t in enumerate(turns[:per_user])]
        for user, turns in zip(("ada", "bob"), list(locomo_turns.values())[:2], strict=False)
    )
    mixed = [t for pair in zip(a, b, strict=False) for t in pair]
    return [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(mixed)]


def as_user(turn: ConversationTurn, user: str, session: int) -> ConversationTurn:
    out = turn.copy()
    out["user_id"], out["session_id"] = user, f"{user}-{session}"
    return out


def batch(step: TraceStep, table: Table, records: list[Record[ConversationTurn]]) -> list[MemoryEvent]:
    """One batch, its writes applied as the worker's table applies them (it holds the very objects)."""
    writes, events = step.process(table, group_by_key(step, records))
    apply(table, writes)
    return events


def apply(table: Table, writes: list[StateWrite]) -> None:
    """Set each written key; a None deletes it, as the worker's table does."""
    for w in writes:
        if w.state is None:
            table.pop(w.key, None)
        else:
            table[w.key] = w.state


def parsing_every_batch(records: list[Record[ConversationTurn]], size: int) -> tuple[list[MemoryEvent], Table]:
    """A new step for every batch (nothing in hand), its table read back from JSON: every state parsed."""
    table: Table = {}
    events: list[MemoryEvent] = []
    for start in range(0, len(records), size):
        table = json.loads(json.dumps(table))
        events += batch(TraceStep(TraceBuilder(CONFIG)), table, records[start : start + size])
    return events, table


def test_states_in_hand_derive_and_write_what_parsing_every_batch_does(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    records = inputs(locomo_turns)
    expected, clean = parsing_every_batch(records, 14)
    step, table, events = TraceStep(TraceBuilder(CONFIG)), Table(), list[MemoryEvent]()
    for start in range(0, len(records), 14):
        events += batch(step, table, records[start : start + 14])
    assert events == expected
    assert json.loads(json.dumps(table)) == clean
    assert step.held.take("ada", table["ada"]) is not None  # it was in hand all along


def test_a_record_the_step_did_not_write_is_parsed(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    """Another worker wrote the user (here: its last session is gone from the record): the next
    batch goes on from the table, not from the state in hand."""
    records = inputs(locomo_turns, per_user=60)
    first, rest = records[:100], records[100:]
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    batch(step, table, first)
    other = json.loads(json.dumps(table))
    other["ada"]["sessions"].pop()  # the head no longer names the user's last session
    table["ada"] = other["ada"]
    batch(step, table, rest)
    expected_step = TraceStep(TraceBuilder(CONFIG))
    batch(expected_step, other, [r for r in rest if r.value["user_id"] == "ada"])
    assert held(table)["ada"] == held(other)["ada"]
    assert table["ada"] == other["ada"]


def test_an_erased_user_starts_empty(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    records = inputs(locomo_turns, per_user=40)
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    batch(step, table, records[:60])
    for key in erased("ada", table):  # the eraser deletes the user's parts and head
        table.pop(key, None)
    assert not [key for key in table if key.startswith("ada")]
    later = [r for r in records[60:] if r.value["user_id"] == "ada"]
    events = batch(step, table, later)
    fresh: Table = {}
    assert events == batch(TraceStep(TraceBuilder(CONFIG)), fresh, later)
    assert {k: v for k, v in table.items() if k.startswith("ada")} == fresh


def test_a_failed_batch_leaves_nothing_half_applied_in_hand(
    locomo_turns: dict[str, list[ConversationTurn]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The batch fails after the builder applied part of it: the retry starts from the table."""
    records = inputs(locomo_turns, per_user=60)
    step, table = TraceStep(TraceBuilder(CONFIG)), Table()
    batch(step, table, records[:40])
    real = step.builder.apply_batch

    def half_then_fail(items: Any) -> Any:
        real(items[: len(items) // 2])
        msg = "the batch failed"
        raise RuntimeError(msg)

    monkeypatch.setattr(step.builder, "apply_batch", half_then_fail)
    with pytest.raises(RuntimeError):
        step.process(table, group_by_key(step, records[40:80]))
    monkeypatch.undo()
    events = batch(step, table, records[40:80])
    expected_table: Table = {}
    expected_step = TraceStep(TraceBuilder(CONFIG))
    batch(expected_step, expected_table, records[:40])
    assert events == batch(expected_step, expected_table, records[40:80])
    assert table == expected_table
