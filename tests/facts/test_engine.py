"""The rule engine itself: rule files, names, an empty working memory, errors (purity: tests/test_purity.py)."""

from __future__ import annotations

from typing import cast

import pytest

from engram.processors.facts.engine import EngineCandidate, RuleEngine, RuleEngineError
from engram.processors.facts.model import CandidateFact
from engram.processors.facts.reconciler import FactReconciler

T0 = 1_767_225_600_000


def test_every_decision_names_a_defined_rule() -> None:
    reconciler = FactReconciler()
    rules = reconciler.engine.rule_names()
    state = reconciler.new_state("u1")
    batches = [
        [CandidateFact("user", "works_at", "Meta", 0.9), CandidateFact("user", "likes", "x", 0.1)],
        [CandidateFact("user", "works_at", "Google", 0.9), CandidateFact("user", "works_at", "google", 0.9)],
        [CandidateFact("user", "no_longer_works_at", "Google", 0.9), CandidateFact("user", "lost", "keys", 0.9)],
    ]
    for i, batch in enumerate(batches):
        for event in reconciler.reconcile(state, batch, event_time_ms=T0 + i):
            change = event["change"][1]
            assert change.get("rule") in rules
            assert change.get("reason")
    assert reconciler.engine.working_memory_size() == 0


def test_unknown_candidate_relation_symbols_are_normalized() -> None:
    reconciler = FactReconciler()
    state = reconciler.new_state("u1")
    events = reconciler.reconcile(state, [CandidateFact("User", "Works At!", "Initech", 0.9)], event_time_ms=T0)
    change = events[0]["change"][1]
    assert (change.get("subject"), change.get("relation"), change.get("decision")) == ("user", "works_at", "store")


def test_a_failed_batch_leaves_a_clean_engine() -> None:
    engine = RuleEngine()
    good = EngineCandidate(0, "id", "user::user", "likes", "tea", 0.9)
    bad = EngineCandidate(1, "id2", "user::user", "likes", "coffee", cast(float, "very"))  # a STRING in a FLOAT slot
    with pytest.raises(RuleEngineError, match="confidence"):
        engine.decide([], [good, bad])
    assert engine.working_memory_size() == 0
    assert [d.action for d in engine.decide([], [good])] == ["store"]
