"""The chaos bench's clean run: derived from the logged inputs in engram.memory's order, the same
whether or not the log also holds redelivered copies, with dreams and every table."""

from __future__ import annotations

from engram.benchmarks.chaos_reference import Inputs, clean_run
from engram.benchmarks.chaos_traffic import GAP_MS
from engram.benchmarks.ingest import make_turns, texts
from engram.processors.trace.records import held as trace_held
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import group_by_key
from engram.streams.config import EngramConfig
from engram.streams.steps import TraceStep

CONFIG = EngramConfig()
REQUESTS = CONFIG.topics.requests


def logged_turns() -> list[Record[ConversationTurn]]:
    """200 turns of two users, one partition each, three sessions per user."""
    offsets = [0, 0]
    out = []
    for turn in make_turns(200, 2, texts(None), gap_ms=GAP_MS):
        partition = int(turn["user_id"][-1])
        out.append(Record(CONFIG.topics.turns, partition, offsets[partition], 0, None, turn))
        offsets[partition] += 1
    return out


def memory_log(turns: list[Record[ConversationTurn]]) -> list[Record[MemoryEvent]]:
    """engram.memory as a worker's ingest writes it: each user's Trace events on its partition."""
    trace = TraceStep()
    events = trace.process({}, group_by_key(trace, turns))[1]
    offsets = [0, 0]
    out = []
    for event in events:
        partition = int(event["key"][-1])
        out.append(Record(CONFIG.topics.memory, partition, offsets[partition], 0, None, event))
        offsets[partition] += 1
    return out


def test_the_clean_run_dreams_and_fills_every_table() -> None:
    turns = logged_turns()
    run = clean_run(Inputs(turns, [], memory_log(turns), REQUESTS), CONFIG)
    assert run.dreams > 0
    assert set(run.tables) == {"trace-state", "code-state", "facts-state", "dream-state"}
    assert set(trace_held(run.tables["trace-state"])) == {"bench-user-0", "bench-user-1"}
    assert {"bench-user-0", "bench-user-1"} <= set(run.tables["dream-state"])
    assert len(run.events) > len(memory_log(turns))  # the facts step's decisions and the dreams


def test_redelivered_copies_in_the_log_change_nothing() -> None:
    turns = logged_turns()
    memory = memory_log(turns)
    clean = clean_run(Inputs(turns, [], memory, REQUESTS), CONFIG)
    # A worker killed mid-batch writes a batch's events again, later in its partition.
    again = [Record(r.topic, r.partition, r.offset + len(memory), 0, None, r.value) for r in memory[40:90]]
    redelivered = clean_run(Inputs(turns, [], memory + again, REQUESTS), CONFIG)
    assert redelivered.events == clean.events
    assert redelivered.tables == clean.tables
