"""The chaos bench's clean run: derived from the logged inputs in engram.memory's order, the same
whether or not the log also holds redelivered copies, with dreams and every table."""

from __future__ import annotations

from engram.benchmarks.chaos_reference import Inputs, clean_run
from engram.benchmarks.chaos_traffic import GAP_MS
from engram.benchmarks.ingest import make_turns, texts
from engram.processors.dreaming.records import read_memory
from engram.processors.trace.records import held as trace_held
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event, nodes_accessed
from engram.schemas.record import Record
from engram.schemas.records import NODES_ACCESSED, ConversationTurn, EventRef, MemoryEvent, NodeUpserted
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


def test_a_compiles_node_access_is_an_input_the_dream_state_holds_once() -> None:
    turns = logged_turns()
    memory = memory_log(turns)
    first = next(n for r in memory if (n := change_as(r.value, NodeUpserted)) is not None and n["kind"] == "event")
    user, at_ms = str(first["user_id"]), max(r.value["event_time_ms"] for r in memory)
    request: EventRef = {"topic": REQUESTS, "partition": 0, "offset": 3}
    access = memory_event(user, at_ms, [request], NODES_ACCESSED, nodes_accessed([first["node_id"]], "q1"))
    partition = int(user[-1])
    tail = len([r for r in memory if r.partition == partition])
    logged = [Record(CONFIG.topics.memory, partition, tail + i, 0, None, access) for i in range(2)]  # and a copy
    run = clean_run(Inputs(turns, [], memory + logged, REQUESTS), CONFIG)
    assert sum(1 for e in run.events if e["event_id"] == access["event_id"]) == 1
    held = read_memory(user, run.tables["dream-state"])
    assert held is not None and held.graph.episodes[first["node_id"]].last_access_ms == at_ms
