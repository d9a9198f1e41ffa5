"""The facts step reads a user's engram.memory in offset order (streams/steps.py: FactsStep)."""

from __future__ import annotations

from engram.schemas.record import Record
from engram.schemas.records import FACT_DECIDED, EventRef, FactDecided, MemoryEvent
from engram.streams.steps import FactsStep, derive_turns, facts_state, first_time
from tests.streams.test_commit_flow import MEMORY, T0, TURNS, turn


def memory_of(*texts: str) -> list[Record[MemoryEvent]]:
    turns = [Record(TURNS, 0, i, 0, b"ada", turn("ada", i, text)) for i, text in enumerate(texts)]
    derived, _ = derive_turns(turns, MEMORY)
    trace = [e for e in derived if e["change"][0] != FACT_DECIDED]
    return [Record(MEMORY, 0, i, 0, b"ada", e) for i, e in enumerate(trace)]


def decisions(events: list[MemoryEvent]) -> list[FactDecided]:
    return [e["change"][1] for e in events if e["change"][0] == FACT_DECIDED]  # type: ignore[misc]


def test_each_turn_is_decided_once_whatever_reaches_memory_twice() -> None:
    memory = memory_of("I work at Meta.", "I live in Lisbon.")
    step = FactsStep()
    writes, events = step.process({}, {"ada": memory})
    assert [(d["relation"], d["value"]) for d in decisions(events)] == [("works_at", "Meta"), ("lives_in", "Lisbon")]
    [write] = writes
    assert write.state is not None
    # The same turns again (a redelivered batch, or the Trace deriving them twice): nothing new.
    again, more = step.process({"ada": write.state}, {"ada": memory})
    assert more == [] and again == []
    assert facts_state(write.state, "ada")[1] == {f"{TURNS}/0": 1}


def test_an_event_node_that_does_not_say_who_spoke_is_not_a_turn() -> None:
    [record, *rest] = memory_of("I work at Meta.")
    node = dict(record.value["change"][1])
    node["properties"] = {}
    stripped: MemoryEvent = {**record.value, "change": (record.value["change"][0], node)}  # type: ignore[typeddict-item]
    writes, events = FactsStep().process({}, {"ada": [record.decoded(stripped), *rest]})
    assert (writes, events) == ([], [])


def test_first_time_is_per_source_partition() -> None:
    applied: dict[str, int] = {}
    refs: list[EventRef] = [
        {"topic": "t", "partition": 0, "offset": 5},
        {"topic": "t", "partition": 1, "offset": 2},
        {"topic": "t", "partition": 0, "offset": 5},
        {"topic": "t", "partition": 0, "offset": 4},
        {"topic": "t", "partition": 0, "offset": 6},
    ]
    assert [first_time(applied, [ref]) for ref in refs] == [True, True, False, False, True]
    assert first_time(applied, []) is False


def test_the_lifecycle_timer_prunes_stale_short_term_facts_on_event_time() -> None:
    """A short-term fact nobody read is pruned once the user's memory passes the 24 h TTL, at the
    hour boundary crossed (event time), with the rule and the reason; a replay prunes the same."""
    day_later = 25 * 3_600_000
    later = turn("ada", 1, "I live in Lisbon.")
    later["event_time_ms"] = T0 + day_later
    said = [turn("ada", 0, "I have a meeting tomorrow."), later]
    turns = [Record(TURNS, 0, i, 0, b"ada", t) for i, t in enumerate(said)]
    derived, _ = derive_turns(turns, MEMORY)
    trace = [e for e in derived if e["change"][0] != FACT_DECIDED]
    memory = [Record(MEMORY, 0, i, 0, b"ada", e) for i, e in enumerate(trace)]
    _, events = FactsStep().process({}, {"ada": memory})
    meta = [d for d in decisions(events) if d["relation"] == "has_event"]
    assert [d["decision"] for d in meta] == ["store", "prune"]
    assert meta[0]["horizon"] == "short_term"
    assert meta[1]["rule"] == "prune-stale-short-term" and "TTL" in meta[1]["reason"]
    boundary = T0 + day_later - (T0 + day_later) % 3_600_000
    assert meta[1]["recorded_at_ms"] == boundary
    _, again = FactsStep().process({}, {"ada": memory})
    assert again == events
