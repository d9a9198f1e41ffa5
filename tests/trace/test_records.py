"""The Trace state in table parts (processors/trace/records.py) through the trace step: a batch
writes what it changed, restarts and crashes mid-write change no event, and an erasure or an older
whole record is read as a user expects."""

from __future__ import annotations

import json
import random
from dataclasses import replace

import pytest

from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.config import BALANCED
from engram.processors.trace.records import (
    TraceRecordError,
    held_trace,
    read_trace_state,
    trace_erased,
    trace_records,
)
from engram.processors.trace.state import state_to_dict
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import StateWrite, group_by_key
from engram.streams.commit import JsonState
from engram.streams.steps import TraceStep

Table = dict[str, JsonState]
CONFIG = replace(BALANCED, max_sessions=3)  # sessions are forgotten within the conversations below


def records(locomo_turns: dict[str, list[ConversationTurn]], per_user: int = 240) -> list[Record[ConversationTurn]]:
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


def write(table: Table, writes: list[StateWrite], upto: int | None = None) -> None:
    """Apply writes as a worker's table does (it holds the very objects written), or only the
    first ``upto`` (a crash)."""
    for w in writes[:upto]:
        if w.state is None:
            table.pop(w.key, None)
        else:
            table[w.key] = w.state


def restarted(table: Table) -> tuple[TraceStep, Table]:
    """A new worker: nothing in hand, its table read back from the changelog (JSON)."""
    return TraceStep(TraceBuilder(CONFIG)), json.loads(json.dumps(table))


def run(
    inputs: list[Record[ConversationTurn]], rng: random.Random | None = None
) -> tuple[dict[str, MemoryEvent], Table]:
    """The step over ``inputs`` and the events it delivered, by id; with ``rng``, in random batches,
    some after a restart (nothing in hand) and some crashing mid-write first. A batch's events are
    delivered before its state is written (streams/commit.py), so a crashed attempt's count, and
    the batch then comes again: a copy it derives again must be the very same event."""
    table: Table = {}
    step, start = TraceStep(TraceBuilder(CONFIG)), 0
    delivered: dict[str, MemoryEvent] = {}

    def deliver(events: list[MemoryEvent]) -> None:
        for event in events:
            assert delivered.setdefault(event["event_id"], event) == event

    while start < len(inputs):
        size = rng.randint(1, 40) if rng else len(inputs)
        batch = inputs[start : start + size]
        if rng and rng.random() < 0.3:
            step, table = restarted(table)
        if rng and rng.random() < 0.3:
            writes, derived = step.process(table, group_by_key(step, batch))
            deliver(derived)
            write(table, writes, upto=rng.randint(0, len(writes) - 1))
            step, table = restarted(table)  # the worker died: its memory with it
        writes, derived = step.process(table, group_by_key(step, batch))
        deliver(derived)
        write(table, writes)
        start += size
    return delivered, table


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_restarts_and_crashes_mid_write_give_the_same_events_and_state(
    locomo_turns: dict[str, list[ConversationTurn]], seed: int
) -> None:
    inputs = records(locomo_turns)
    expected, clean = run(inputs)
    got, table = run(inputs, random.Random(seed))
    assert got == expected
    assert held_trace(table) == held_trace(clean)
    assert len(held_trace(clean)["ada"]["sessions"]) == CONFIG.max_sessions
    assert not any(k.startswith("ada\x00s/ada-0/") for k in clean)  # the forgotten session's part is gone


def test_a_batch_writes_what_it_changed_not_the_history(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    inputs = records(locomo_turns, per_user=400)
    step, sizes = TraceStep(TraceBuilder()), []
    table: Table = {}
    for start in range(0, len(inputs), 10):
        writes, _ = step.process(table, group_by_key(step, inputs[start : start + 10]))
        sizes.append(sum(len(json.dumps(w.state)) for w in writes if w.state is not None))
        write(table, writes)
    whole = len(json.dumps(held_trace(table)))  # both users' states, as one record each held them
    early, late = sum(sizes[5:15]) / 10, sum(sizes[-10:]) / 10
    assert late < 1.5 * early  # flat as the history grows
    assert late < whole / 5  # against rewriting each user's whole state every batch


def test_an_older_whole_record_is_read_and_stored_in_parts(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    inputs = records(locomo_turns, per_user=60)
    builder = TraceBuilder(CONFIG)
    builder.apply_batch([(r.value, r.ref) for r in inputs[:80]])
    table: Table = {"ada": json.loads(json.dumps(builder.dump_state("ada")))}  # version 1: one record
    state = read_trace_state("ada", table)
    assert state is not None and state.atlas is not None
    assert state_to_dict(state) == builder.dump_state("ada")
    stored = [key for key, _ in trace_records(state) if key.startswith("ada\x00")]
    assert len(stored) == len(state.sessions) + sum(len(level) for level in state.atlas.levels)
    expected = builder.apply_batch([(r.value, r.ref) for r in inputs[80:] if r.value["user_id"] == "ada"])
    step = TraceStep(TraceBuilder(CONFIG))
    _, got = step.process(table, group_by_key(step, [r for r in inputs[80:] if r.value["user_id"] == "ada"]))
    assert got == expected


def test_an_erasure_deletes_every_part_and_a_missing_part_is_a_clear_error(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    _, table = run(records(locomo_turns, per_user=60))
    keys = trace_erased("ada", table)
    assert set(keys) == {k for k in table if k == "ada" or k.startswith("ada\x00")}
    part = next(k for k in keys if k != "ada")
    del table[part]
    with pytest.raises(TraceRecordError, match="does not hold"):
        read_trace_state("ada", table)
