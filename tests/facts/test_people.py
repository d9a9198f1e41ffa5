"""People called by name are the relatives the user named so (facts/people.py)."""

from __future__ import annotations

import pytest

from engram.processors.facts import FactReconciler, PatternExtractor, UserFacts, Utterance
from engram.processors.facts.subjects import NAMED, named_subject

T0 = 1_772_323_200_000  # 2026-03-01
DAY = 86_400_000


def active_after(*texts: str) -> set[tuple[str, str, str]]:
    extractor, reconciler, state = PatternExtractor(), FactReconciler(), UserFacts("u1")
    for i, text in enumerate(texts):
        turn = Utterance(text, "user", "agent-1", None, (f"t{i}",), T0 + i * DAY)
        reconciler.reconcile(state, extractor.extract([turn]), event_time_ms=T0 + i * DAY)
    return {(f.subject, f.relation, f.value) for f in state.facts.values()}


@pytest.mark.parametrize(
    ("before", "after", "gone", "now"),
    [
        ("my sister Ana lives in Madrid", "Ana just moved to Berlin", ("user.sister", "lives_in", "Madrid"),
         ("user.sister", "lives_in", "Berlin")),
        ("my son Leo is 6", "Leo turned 7 last week", ("user.son", "age_is", "6"), ("user.son", "age_is", "7")),
        ("my friend Priya is a nurse", "Priya is a doctor now", ("user.friend", "works_as", "nurse"),
         ("user.friend", "works_as", "doctor")),
    ],
)  # fmt: skip
def test_a_relative_called_by_name_gets_the_news(
    before: str, after: str, gone: tuple[str, str, str], now: tuple[str, str, str]
) -> None:
    active = active_after(before, after)
    assert now in active and gone not in active


def test_a_name_the_user_gave_no_one_yields_no_fact() -> None:
    assert active_after("Caroline lives in Paris") == set()


@pytest.mark.parametrize(
    ("clause", "expected"),
    [
        ("Ana lives in Berlin now", NAMED + "Ana"),
        ("Leo turned 7 last week", NAMED + "Leo"),
        ("Dance is my passion", None),  # the speaker is in the clause: not a person's news
        ("Paris is lovely", NAMED + "Paris"),  # read as a name; no relative is called so, so no fact
        ("It is raining", None),
        ("Ana and I moved to Berlin", None),
    ],
)
def test_a_clause_opening_on_a_name_and_a_verb_is_about_that_person(clause: str, expected: str | None) -> None:
    found = named_subject(clause)
    assert (found[0] if found else None) == expected
