"""NeuSymMS's worked examples (sections IV.D, IV.F, III.G) through the real rule engine."""

from __future__ import annotations

from typing import cast

import pytest

from engram.processors.facts.extractor import PatternExtractor, Utterance
from engram.processors.facts.model import CandidateFact, UserFacts
from engram.processors.facts.read import facts_block
from engram.processors.facts.reconciler import FactReconciler
from engram.schemas.records import FactDecided, MemoryEvent

T0 = 1_767_225_600_000


def changes(events: list[MemoryEvent]) -> list[FactDecided]:
    return [cast(FactDecided, e["change"][1]) for e in events]


@pytest.fixture(scope="module")
def reconciler() -> FactReconciler:
    return FactReconciler()


def seeded(reconciler: FactReconciler) -> UserFacts:
    """Step 2 of IV.F: the database holds works_at Meta and lives_in Menlo Park."""
    state = reconciler.new_state("u1")
    existing = [CandidateFact("user", "works_at", "Meta", 0.9), CandidateFact("user", "lives_in", "Menlo Park", 0.9)]
    reconciler.reconcile(state, existing, event_time_ms=T0)
    return state


def test_extraction_step_yields_the_papers_four_triples() -> None:
    text = "I just started a new job at Google in Mountain View. I speak Python and Go."
    got = PatternExtractor().extract([Utterance(text)])
    assert [(c.subject, c.relation, c.value, c.confidence) for c in got] == [
        ("user", "works_at", "Google", 0.9),
        ("user", "lives_in", "Mountain View", 0.85),
        ("user", "speaks_language", "Python", 0.9),
        ("user", "speaks_language", "Go", 0.9),
    ]


def test_meta_to_google_and_menlo_park_to_mountain_view(reconciler: FactReconciler) -> None:
    state = seeded(reconciler)
    meta_id, menlo_id = list(state.facts)
    text = "I just started a new job at Google in Mountain View. I speak Python and Go."
    cands = PatternExtractor().extract([Utterance(text, source_event_ids=("turn-2",))])
    got = changes(reconciler.reconcile(state, cands, event_time_ms=T0 + 1000))
    assert [(d["decision"], d["rule"], d["relation"], d["value"], d["category"], d["horizon"]) for d in got] == [
        ("retract", "replace-single-valued", "works_at", "Meta", "personal", "long_term"),
        ("replace", "promote-by-category", "works_at", "Google", "personal", "long_term"),
        ("retract", "replace-single-valued", "lives_in", "Menlo Park", "personal", "long_term"),
        ("replace", "promote-by-category", "lives_in", "Mountain View", "personal", "long_term"),
        ("store", "promote-by-category", "speaks_language", "Python", "skill", "long_term"),
        ("store", "promote-by-category", "speaks_language", "Go", "skill", "long_term"),
    ]
    assert got[0]["fact_id"] == meta_id and got[1]["supersedes"] == meta_id
    assert got[2]["fact_id"] == menlo_id and got[3]["supersedes"] == menlo_id
    assert got[0]["reason"] == "works_at 'meta' is superseded by 'google' (single-valued: latest wins)"
    assert got[4]["reason"] == "skill facts are durable: speaks_language 'python' stored as long_term"
    assert got[0]["valid_to_ms"] == T0 + 1000 and got[1]["valid_from_ms"] == T0 + 1000
    assert got[4]["source_event_ids"] == ["turn-2"]
    text_block, _ = facts_block(state, "u1")
    assert text_block == "\n".join(
        [
            "[Memory – Known facts about this user]",
            "[LT/personal] user works_at Google",
            "[LT/personal] user lives_in Mountain View",
            "[LT/skill] user speaks_language Python",
            "[LT/skill] user speaks_language Go",
        ]
    )


def test_my_cat_died_retracts_has_pet_and_is_not_stored(reconciler: FactReconciler) -> None:
    state = reconciler.new_state("u1")
    reconciler.reconcile(state, [CandidateFact("user", "has_pet", "cat named Whiskers", 0.9)], event_time_ms=T0)
    cands = PatternExtractor().extract([Utterance("My cat died.")])
    assert [(c.relation, c.value) for c in cands] == [("died", "cat")]
    got = changes(reconciler.reconcile(state, cands, event_time_ms=T0 + 5000))
    assert [(d["decision"], d["rule"], d["relation"], d["value"]) for d in got] == [
        ("retract", "retract-negated-fact", "has_pet", "cat named Whiskers")
    ]
    assert got[0]["reason"] == "died 'cat' negates has_pet 'cat named whiskers'"
    assert state.facts == {}, "the negation itself is never stored"


def test_paper_negation_candidate_with_full_value(reconciler: FactReconciler) -> None:
    state = reconciler.new_state("u1")
    reconciler.reconcile(state, [CandidateFact("user", "has_pet", "cat named Whiskers", 0.9)], event_time_ms=T0)
    got = changes(
        reconciler.reconcile(state, [CandidateFact("user", "died", "cat named Whiskers", 0.9)], event_time_ms=T0 + 1)
    )
    assert [(d["decision"], d["rule"]) for d in got] == [("retract", "retract-negated-fact")]


def test_a_point_two_confidence_fact_is_dropped(reconciler: FactReconciler) -> None:
    state = reconciler.new_state("u1")
    got = changes(reconciler.reconcile(state, [CandidateFact("user", "likes", "opera", 0.2)], event_time_ms=T0))
    assert [(d["decision"], d["rule"], d["reason"]) for d in got] == [
        ("drop", "drop-low-confidence", "likes 'opera': confidence 0.2 is below the minimum 0.3")
    ]
    assert state.facts == {}


def test_read_path_example_block(reconciler: FactReconciler) -> None:
    state = reconciler.new_state("u1")
    facts = [
        CandidateFact("user", "works_at", "Google", 0.95),
        CandidateFact("user", "lives_in", "Mountain View", 0.85),
        CandidateFact("user", "speaks_language", "Python", 0.9),
        CandidateFact("user", "speaks_language", "Go", 0.9),
        CandidateFact("user", "prefers", "dark mode", 0.9),
    ]
    reconciler.reconcile(state, facts, event_time_ms=T0)
    text, _ = facts_block(state, "u1")
    assert text.splitlines() == [
        "[Memory – Known facts about this user]",
        "[LT/personal] user works_at Google",
        "[LT/personal] user lives_in Mountain View",
        "[LT/skill] user speaks_language Python",
        "[LT/skill] user speaks_language Go",
        "[LT/preference] user prefers dark mode",
    ]
