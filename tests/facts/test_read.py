"""The read path: ordering, cap, user scope only, and the access event."""

from __future__ import annotations

from typing import cast

from engram.processors.facts.model import CandidateFact
from engram.processors.facts.read import BLOCK_HEADER, facts_block
from engram.processors.facts.reconciler import FactReconciler
from engram.schemas.records import FACT_ACCESSED, FactAccessed

T0 = 1_767_225_600_000


def test_block_is_capped_and_ordered_long_term_first() -> None:
    reconciler = FactReconciler()
    state = reconciler.new_state("u1")
    words = [letter * 6 for letter in "abcdefghijklmnopqrst"]  # pairwise far below the 0.85 similarity
    tasks = [CandidateFact("user", "needs_to", f"do {w}", 0.9) for w in words]
    skills = [CandidateFact("user", "knows", w.upper(), 0.9) for w in words]
    reconciler.reconcile(state, tasks, event_time_ms=T0)
    reconciler.reconcile(state, skills, event_time_ms=T0 + 10)
    text, event = facts_block(state, "u1", request_id="r1", event_time_ms=T0 + 20)
    lines = text.splitlines()
    assert lines[0] == BLOCK_HEADER
    assert len(lines) == 31, "header + at most 30 facts"
    assert all(line.startswith("[LT/skill]") for line in lines[1:21])
    assert all(line.startswith("[ST/task]") for line in lines[21:])
    assert event is not None and event["change"][0] == FACT_ACCESSED
    accessed = cast(FactAccessed, event["change"][1])
    assert accessed["user_id"] == "u1" and accessed["request_id"] == "r1"
    assert len(accessed["fact_ids"]) == 30
    assert event["event_time_ms"] == T0 + 20


def test_access_count_then_recency_orders_within_a_horizon() -> None:
    reconciler = FactReconciler()
    state = reconciler.new_state("u1")
    reconciler.reconcile(state, [CandidateFact("user", "likes", "tea", 0.9)], event_time_ms=T0)
    reconciler.reconcile(state, [CandidateFact("user", "likes", "jazz", 0.9)], event_time_ms=T0 + 1)
    text, _ = facts_block(state, "u1")
    assert text.splitlines()[1:] == ["[LT/preference] user likes jazz", "[LT/preference] user likes tea"]
    tea = next(f for f in state.facts.values() if f.value == "tea")
    reconciler.apply_access(
        state, {"user_id": "u1", "fact_ids": [tea.fact_id], "request_id": "r"}, event_time_ms=T0 + 2
    )
    text, _ = facts_block(state, "u1")
    assert text.splitlines()[1:] == ["[LT/preference] user likes tea", "[LT/preference] user likes jazz"]


def test_only_user_scope_and_only_the_owner() -> None:
    reconciler = FactReconciler()
    state = reconciler.new_state("u1")
    reconciler.reconcile(
        state,
        [
            CandidateFact("agent", "works_as", "travel assistant", 0.9, "agent", "a1"),
            CandidateFact("flow", "deadline_is", "Friday", 0.9, "flow", "f1"),
        ],
        event_time_ms=T0,
    )
    assert facts_block(state, "u1") == ("", None), "nothing user-scoped: no block and no access"
    reconciler.reconcile(state, [CandidateFact("user", "likes", "tea", 0.9)], event_time_ms=T0)
    assert facts_block(state, "someone-else") == ("", None)
    text, event = facts_block(state, "u1")
    assert text.splitlines()[1:] == ["[LT/preference] user likes tea"] and event is not None


def test_access_from_another_user_is_ignored() -> None:
    reconciler = FactReconciler()
    state = reconciler.new_state("u1")
    reconciler.reconcile(state, [CandidateFact("user", "needs_to", "call mom", 0.9)], event_time_ms=T0)
    fid = next(iter(state.facts))
    for i in range(3):
        assert (
            reconciler.apply_access(state, {"user_id": "u2", "fact_ids": [fid], "request_id": str(i)}, event_time_ms=T0)
            == []
        )
    assert state.facts[fid].access_count == 0
