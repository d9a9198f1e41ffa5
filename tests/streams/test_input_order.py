"""A step's derived events leave in the order of the inputs they derive from, so the memory path
derives the same events however the turns were batched (the dream schedule keeps a partition's
stream time on engram.memory)."""

from __future__ import annotations

from engram.benchmarks.ingest import make_turns, texts
from engram.processors.trace import TraceBuilder
from engram.schemas.events import edge_upserted, memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, ConversationTurn, EventRef, MemoryEvent
from engram.streams.agents.ingest import StateWrite, group_by_key, in_input_order
from engram.streams.agents.stores import with_upstream
from engram.streams.commit import JsonState
from engram.streams.dream_step import DreamStep
from engram.streams.steps import FactsStep, TraceStep

TURNS = "engram.turns"


def ref(offset: int) -> EventRef:
    return {"topic": TURNS, "partition": 0, "offset": offset}


def test_keys_are_interleaved_by_the_inputs_they_cite_and_each_keeps_its_own_order() -> None:
    inputs = [Record(TURNS, 0, offset, 0, None, None) for offset in (10, 11, 12, 13)]
    # What a keyed step emits: ann's turns 10 and 12, then bob's 11 and 13; ann's edge at 12 cites
    # turn 10 as well, and a closing event of bob's cites nothing of the batch.
    ann = [
        memory_event("ann", 1, [ref(10)], NODE_UPSERTED, node_upserted("a10", "event", "USER", 1)),
        memory_event("ann", 3, [ref(12)], NODE_UPSERTED, node_upserted("a12", "event", "USER", 3)),
        memory_event("ann", 3, [ref(10), ref(12)], EDGE_UPSERTED, edge_upserted("NEXT", "a10", "a12", "USER")),
    ]
    bob = [memory_event("bob", 2, [ref(11)], NODE_UPSERTED, node_upserted("b11", "event", "USER", 2)),
           memory_event("bob", 4, [ref(13)], NODE_UPSERTED, node_upserted("b13", "event", "USER", 4)),
           memory_event("bob", 4, [ref(99)], NODE_UPSERTED, node_upserted("b99", "concept", "USER", 4))]  # fmt: skip
    ordered = in_input_order([*ann, *bob], inputs)
    assert [e["change"][1].get("node_id", "edge") for e in ordered] == ["a10", "b11", "a12", "edge", "b13", "b99"]
    assert [e for e in ordered if e["key"] == "ann"] == ann and [e for e in ordered if e["key"] == "bob"] == bob


def test_an_event_citing_what_an_input_cites_is_placed_at_that_input() -> None:
    # The memory agent's facts step: its inputs are engram.memory records citing turns, and the
    # decisions it derives cite those turns.
    def node(user: str, turn: int) -> MemoryEvent:
        return memory_event(
            user, turn, [ref(turn)], NODE_UPSERTED, node_upserted(f"{user}{turn}", "event", "USER", turn)
        )

    inputs = [Record("engram.memory", 0, i, 0, None, node(user, turn)) for i, (user, turn) in
              enumerate([("ann", 10), ("bob", 11), ("ann", 12)])]  # fmt: skip
    decided = [node("ann", 10), node("ann", 12), node("bob", 11)]  # as the step emits them: key by key
    assert in_input_order(decided, inputs) == [node("ann", 10), node("bob", 11), node("ann", 12)]


def test_events_citing_no_input_of_the_batch_keep_the_steps_order() -> None:
    events = [memory_event(user, 1, [], NODE_UPSERTED, node_upserted(user, "gist", "USER", 1)) for user in "cab"]
    assert in_input_order(events, [Record(TURNS, 0, 0, 0, None, None)]) == events


def written(states: dict[str, JsonState], writes: list[StateWrite]) -> None:
    for w in writes:
        if w.state is None:
            states.pop(w.key, None)
        else:
            states[w.key] = w.state


def derive(turns: list[ConversationTurn], ingest_batch: int, memory_batch: int) -> dict[str, MemoryEvent]:
    """Trace, then facts and dreams over one engram.memory partition, each step's outputs appended
    behind what the topic holds, as the live agents do."""
    trace, facts, dreams = TraceStep(TraceBuilder()), FactsStep(), DreamStep()
    trace_states: dict[str, JsonState] = {}
    facts_states: dict[str, JsonState] = {}
    dream_states: dict[str, JsonState] = {}
    topic: list[MemoryEvent] = []
    read = 0
    for start in range(0, len(turns), ingest_batch):
        batch = [Record(TURNS, 0, start + i, 0, None, t) for i, t in enumerate(turns[start : start + ingest_batch])]
        writes, derived = trace.process(trace_states, group_by_key(trace, batch))
        written(trace_states, writes)
        topic.extend(in_input_order(derived, batch))
        while read < len(topic):
            unread = topic[read : read + memory_batch]
            records = [Record("engram.memory", 0, read + i, 0, None, e) for i, e in enumerate(unread)]
            read += len(records)
            writes, decided = facts.process(facts_states, group_by_key(facts, records))
            written(facts_states, writes)
            writes, dreamt = dreams.process(dream_states, group_by_key(dreams, with_upstream(records, decided)))
            written(dream_states, writes)
            topic.extend(decided + dreamt)
    return {e["event_id"]: e for e in topic}


def test_the_memory_path_derives_the_same_events_however_the_turns_were_batched() -> None:
    # Five users, sessions of 40 turns: idle sessions dream while the others talk on. Batched as
    # one, every turn's events precede the later turns'; in batches of 7 a user's later turn came
    # before another's earlier one and moved the partition's stream time on, so a session was
    # dreamt without its last turns.
    turns = make_turns(1000, 5, texts(None))
    whole = derive(turns, len(turns), 10**6)
    assert any(e["change"][1].get("kind") == "gist" for e in whole.values())  # dreams ran
    assert derive(turns, 7, 61) == whole
