"""The per-turn entry point the Faust agent uses, with the state kept as a table would keep it."""

from __future__ import annotations

import json

import pytest

from engram.processors.facts.extractor import PatternExtractor
from engram.processors.facts.reconciler import FactReconciler
from engram.processors.facts.temporal import believed_at, fact_decisions
from engram.processors.facts.turns import StateOwnerError, facts_from_turn
from engram.schemas.records import ConversationTurn, EventRef, MemoryEvent

T0 = 1_767_225_600_000


def turn(i: int, user: str, text: str) -> ConversationTurn:
    return {
        "turn_id": f"{user}-{i}",
        "user_id": user,
        "agent_id": None,
        "flow_id": None,
        "session_id": f"s-{user}",
        "turn_index": i,
        "role": "user",
        "content": text,
        "event_time_ms": T0 + i * 60_000,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": {},
    }


TURNS = [
    turn(0, "alice", "I work at Meta and I live in Menlo Park."),
    turn(1, "bob", "I work at Meta too, I live in Paris."),
    turn(2, "alice", "I just started a new job at Google in Mountain View."),
    turn(3, "bob", "My cat died."),
    turn(4, "alice", "I speak Python and Go."),
]


def run(turns: list[ConversationTurn]) -> tuple[dict[str, str], list[MemoryEvent]]:
    reconciler, extractor = FactReconciler(), PatternExtractor()
    table: dict[str, str] = {}
    events: list[MemoryEvent] = []
    for offset, t in enumerate(turns):
        ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": offset}
        stored = table.get(t["user_id"])
        data, out = facts_from_turn(reconciler, extractor, json.loads(stored) if stored else None, t, ref)
        table[t["user_id"]] = json.dumps(data, sort_keys=True)
        events.extend(out)
    return table, events


def test_two_users_never_mix_and_replay_gives_the_same_store() -> None:
    table, events = run(TURNS)
    again, events_again = run(TURNS)
    assert table == again and events == events_again
    alice = sorted((d["relation"], d["value"]) for d in believed_at(fact_decisions(events), "alice", T0 + 10**9))
    bob = sorted((d["relation"], d["value"]) for d in believed_at(fact_decisions(events), "bob", T0 + 10**9))
    assert alice == [
        ("lives_in", "Mountain View"),
        ("speaks_language", "Go"),
        ("speaks_language", "Python"),
        ("works_at", "Google"),
    ]
    assert bob == [("lives_in", "Paris"), ("works_at", "Meta")]
    assert all(e["key"] == e["change"][1].get("user_id") for e in events)


def test_state_of_another_user_is_refused() -> None:
    reconciler, extractor = FactReconciler(), PatternExtractor()
    ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 0}
    data, _ = facts_from_turn(reconciler, extractor, None, TURNS[0], ref)
    with pytest.raises(StateOwnerError):
        facts_from_turn(reconciler, extractor, data, TURNS[1], ref)
