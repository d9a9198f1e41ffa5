"""The facts step reads a user's engram.memory in offset order (streams/steps.py: FactsStep)."""

from __future__ import annotations

from engram.processors.facts import FactReconciler, RuleEngineError
from engram.processors.facts.reconciler import ENGINE_ERROR_RULE
from engram.schemas.record import Record
from engram.schemas.records import FACT_DECIDED, EventRef, FactDecided, MemoryEvent, Role
from engram.streams.agents.ingest import group_by_key
from engram.streams.commit import JsonState
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
    [write] = [w for w in writes if w.key == "ada"]
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


def test_an_inactive_user_is_pruned_on_the_partitions_stream_time_whatever_the_batching() -> None:
    """Issue 47: the TTL prune runs on the partition's stream time, so a user who said nothing more
    is pruned once another user's memory on the same partition passes the TTL; the same records in
    one batch or one by one prune at the same point."""
    quiet = turn("ada", 0, "I have a meeting tomorrow.")
    busy = turn("bo", 0, "I live in Lisbon.")
    busy["event_time_ms"] = T0 + 25 * 3_600_000
    turns = [Record(TURNS, 0, 0, 0, b"ada", quiet), Record(TURNS, 0, 1, 0, b"bo", busy)]
    derived, _ = derive_turns(turns, MEMORY)
    trace = [e for e in derived if e["change"][0] != FACT_DECIDED]
    memory = [Record(MEMORY, 0, i, 0, e["key"].encode(), e) for i, e in enumerate(trace)]
    step = FactsStep()
    _, events = step.process({}, group_by_key(step, memory))
    pruned = [d for d in decisions(events) if d["decision"] == "prune"]
    assert [(d["relation"], d["user_id"]) for d in pruned] == [("has_event", "ada")]
    states: dict[str, JsonState] = {}
    one_by_one: list[MemoryEvent] = []
    for record in memory:
        groups = group_by_key(step, [record])
        writes, made = FactsStep().process(states, groups)
        assert {w.group for w in writes} <= set(groups)  # written at a key of the batch (ada's has none)
        states.update({w.key: w.state for w in writes if w.state is not None})
        one_by_one.extend(made)
    assert one_by_one == events


def memory_said(*said: tuple[Role, str, int]) -> list[Record[MemoryEvent]]:
    """(role, text, minutes after T0) per turn, through the Trace, as the facts step reads them."""
    turns = []
    for i, (role, text, minutes) in enumerate(said):
        t = turn("ada", i, text)
        t["role"], t["event_time_ms"] = role, T0 + minutes * 60_000
        turns.append(Record(TURNS, 0, i, 0, b"ada", t))
    derived, _ = derive_turns(turns, MEMORY)
    trace = [e for e in derived if e["change"][0] != FACT_DECIDED]
    return [Record(MEMORY, 0, i, 0, b"ada", e) for i, e in enumerate(trace)]


def test_yes_thats_right_stores_what_the_assistant_restated() -> None:
    """Seed 003's prompt-context: the reply a turn answers. "yep, that's right" to "So you're at
    Stripe now?" is the user saying they work at Stripe; the question is kept across batches."""
    memory = memory_said(("user", "I work at KPMG.", 0), ("assistant", "So you work at Stripe now?", 1),
                         ("user", "yep, that's right", 2))  # fmt: skip
    step = FactsStep()
    _, events = step.process({}, {"ada": memory})
    assert [(d["decision"], d["relation"], d["value"]) for d in decisions(events)] == [
        ("store", "works_at", "KPMG"),
        ("retract", "works_at", "KPMG"),
        ("replace", "works_at", "Stripe"),
    ]
    # the same, the question and the answer in two batches: the question is in the state between them
    cut = next(i for i, r in enumerate(memory) if r.value["change"][1].get("text") == "yep, that's right")
    [first] = [w for w in step.process({}, {"ada": memory[:cut]})[0] if w.key == "ada"]
    assert first.state is not None
    _, later = FactsStep().process({"ada": first.state}, {"ada": memory[cut:]})
    assert [(d["relation"], d["value"]) for d in decisions(later)][-1] == ("works_at", "Stripe")


class _Broken(FactReconciler):
    def reconcile(self, *_: object, **__: object) -> list[MemoryEvent]:
        msg = "rule engine run failed: boom"
        raise RuleEngineError(msg)


def test_a_rule_engine_error_keeps_the_turns_facts_short_term() -> None:
    """Seed 003 §VI.B: when CLIPS fails, the candidates are kept as short-term facts (with the error
    as the reason), not lost and not dead-lettered."""
    writes, events = FactsStep(reconciler=_Broken()).process({}, {"ada": memory_of("I work at Meta.")})
    [kept] = decisions(events)
    assert (kept["decision"], kept["rule"], kept["horizon"]) == ("store", ENGINE_ERROR_RULE, "short_term")
    assert "boom" in kept["reason"] and kept["value"] == "Meta"
    assert facts_state(writes[0].state, "ada")[0].facts[kept["fact_id"]].value == "Meta"


def test_on_a_rule_engine_error_names_and_corrections_are_read_first() -> None:
    """What is kept short-term on an engine error is read as the rules would have read it: a
    relative called by name is that relative's, an unknown name and a correction that meets no
    fact are no fact."""
    memory = memory_of("my sister Ana is great.", "Ana lives in Berlin. Caroline lives in Paris. oops, Jack not Jake")
    first = [r for r in memory if r.value["sources"][0]["offset"] == 0]
    [write] = [w for w in FactsStep().process({}, {"ada": first})[0] if w.key == "ada"]
    assert write.state is not None
    later = [r for r in memory if r.value["sources"][0]["offset"] == 1]
    _, events = FactsStep(reconciler=_Broken()).process({"ada": write.state}, {"ada": later})
    assert [(d["subject"], d["relation"], d["value"]) for d in decisions(events)] == [
        ("user.sister", "lives_in", "Berlin")
    ]


def test_a_correction_outlives_the_short_term_prune() -> None:
    """A short-term value replaced by a newer turn is the latest word: the TTL prune never takes it,
    so a correction cannot leave nothing behind."""
    memory = memory_said(("user", "I'm tired.", 0), ("user", "I'm happy.", 1), ("user", "I live in Lisbon.", 26 * 60))
    _, events = FactsStep().process({}, {"ada": memory})
    feeling = [(d["decision"], d["value"]) for d in decisions(events) if d["relation"] == "is_feeling"]
    assert feeling == [("store", "tired"), ("retract", "tired"), ("replace", "happy")]


def test_a_correction_in_a_later_batch_replaces_the_fact_kept_in_the_table() -> None:
    """ "oops his name's Jack not Jake" arrives in a later batch than the name it corrects: the step
    reads the user's facts back from its table state and replaces the wrong one, with the rule."""
    memory = memory_of("my boyfriend Jake loves hiking.", "oops his name's Jack not Jake, autocorrect")
    step = FactsStep()
    first = [r for r in memory if r.value["sources"][0]["offset"] == 0]
    writes, _ = step.process({}, {"ada": first})
    [write] = [w for w in writes if w.key == "ada"]
    assert write.state is not None
    later = [r for r in memory if r.value["sources"][0]["offset"] == 1]
    writes, events = step.process({"ada": write.state}, {"ada": later})
    assert [(d["decision"], d["rule"], d["value"]) for d in decisions(events)][:2] == [
        ("retract", "correct-a-value", "Jake"),
        ("replace", "promote-by-category", "Jack"),
    ]
    [write] = [w for w in writes if w.key == "ada"]
    kept = facts_state(write.state, "ada")[0].facts.values()
    assert {f.value for f in kept if f.relation == "has_boyfriend"} == {"Jack"}
