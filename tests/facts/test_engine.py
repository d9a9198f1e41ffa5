"""The rule engine itself: rule files, names, an empty working memory, errors (purity: tests/test_purity.py)."""

from __future__ import annotations

from typing import cast

import pytest

from engram.processors.facts.engine import EngineCandidate, RuleEngine, RuleEngineError
from engram.processors.facts.model import CandidateFact
from engram.processors.facts.reconciler import PAPER, FactReconciler, ReconcilerConfig

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


@pytest.mark.parametrize("similarity", ["precomputed", "callback"])
@pytest.mark.parametrize("same_batch", [False, True])
def test_a_dislike_retracts_the_liking_of_the_same_thing_and_back(similarity: str, same_batch: bool) -> None:
    """ "I love sushi", later "I can't stand sushi anymore": the newer statement wins, with its reason;
    a liking of something else stays."""
    reconciler = FactReconciler(ReconcilerConfig(similarity="callback") if similarity == "callback" else PAPER)
    state = reconciler.new_state("u1")
    said = [
        CandidateFact("user", "likes", "sushi", 0.9),
        CandidateFact("user", "likes", "hiking", 0.9),
        CandidateFact("user", "dislikes", "Sushi", 0.9),
    ]
    batches = [said] if same_batch else [[c] for c in said]
    decided = [
        e["change"][1] for i, b in enumerate(batches) for e in reconciler.reconcile(state, b, event_time_ms=T0 + i)
    ]
    retracted = [d for d in decided if d.get("decision") == "retract"]
    assert [(d.get("relation"), d.get("value"), d.get("rule")) for d in retracted] == [
        ("likes", "sushi", "retract-opposite")
    ]
    assert "contradicts likes 'sushi'" in str(retracted[0].get("reason"))
    assert sorted((f.relation, f.norm) for f in state.facts.values()) == [("dislikes", "sushi"), ("likes", "hiking")]
    again = reconciler.reconcile(state, [CandidateFact("user", "likes", "sushi", 0.9)], event_time_ms=T0 + 9)
    assert [e["change"][1].get("rule") for e in again][0] == "retract-opposite"
    assert sorted((f.relation, f.norm) for f in state.facts.values()) == [("likes", "hiking"), ("likes", "sushi")]
    assert reconciler.engine.working_memory_size() == 0


@pytest.mark.parametrize("similarity", ["precomputed", "callback"])
def test_a_pet_named_later_is_the_same_pet_named_not_a_second_one(similarity: str) -> None:
    """ "We adopted a kitten", later "the kitten finally has a name: Biscuit": one pet, named now."""
    reconciler = FactReconciler(ReconcilerConfig(similarity="callback") if similarity == "callback" else PAPER)
    state = reconciler.new_state("u1")
    reconciler.reconcile(state, [CandidateFact("user", "has_pet", "kitten", 0.9)], event_time_ms=T0)
    reconciler.reconcile(state, [CandidateFact("user", "has_pet", "dog", 0.9)], event_time_ms=T0 + 1)
    named = reconciler.reconcile(
        state, [CandidateFact("user", "has_pet", "kitten named Biscuit", 0.9)], event_time_ms=T0 + 2
    )
    changes = [e["change"][1] for e in named]
    assert [(c.get("value"), c.get("decision"), c.get("rule")) for c in changes][0] == (
        "kitten",
        "retract",
        "refine-with-a-name",
    )
    assert changes[1].get("decision") == "replace"
    assert sorted(f.norm for f in state.facts.values()) == ["dog", "kitten named biscuit"]
    assert reconciler.engine.working_memory_size() == 0
