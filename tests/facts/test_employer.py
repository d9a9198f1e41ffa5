"""Where a user is "at" is where they work when their words say so (facts/employer.py)."""

from __future__ import annotations

from engram.processors.facts import FactReconciler, PatternExtractor, UserFacts, Utterance

T0 = 1_772_323_200_000  # 2026-03-01
DAY = 86_400_000


def active_after(*texts: str) -> set[tuple[str, str]]:
    extractor, reconciler, state = PatternExtractor(), FactReconciler(), UserFacts("u1")
    for i, text in enumerate(texts):
        turn = Utterance(text, "user", "agent-1", None, (f"t{i}",), T0 + i * DAY)
        reconciler.reconcile(state, extractor.extract([turn]), event_time_ms=T0 + i * DAY)
    return {(f.relation, f.value) for f in state.facts.values()}


def test_at_a_name_in_the_turn_that_ends_a_job_is_the_new_employer() -> None:
    active = active_after("I started at Figma in January", "left Figma, i'm at Notion now")
    assert ("works_at", "Notion") in active and ("works_at", "Figma") not in active


def test_at_a_company_the_user_interviewed_with_is_the_new_employer() -> None:
    active = active_after("i have an interview with Stripe on thursday", "I'm at Stripe now")
    assert ("works_at", "Stripe") in active


def test_at_a_place_is_where_the_user_is() -> None:
    assert active_after("i'm at Heathrow now") == {("currently_in", "Heathrow")}
    assert active_after("left Figma last year", "I'm at the airport now") == {("currently_in", "the airport")}
