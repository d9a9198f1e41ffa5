"""A user's correction of their own words ("oops, his name's Jack not Jake") puts the fact that
said the wrong value right: the extractor hears it, the reconciler finds which fact it means, and
the rule ``correct-a-value`` replaces that fact, with the reason."""

from __future__ import annotations

from typing import cast

import pytest

from engram.processors.facts import FactReconciler, PatternExtractor, UserFacts, Utterance
from engram.processors.facts.corrections import CORRECTED, said
from engram.processors.facts.reconciler import CALLBACK
from engram.schemas.records import FactDecided

DAY = 86_400_000
T0 = 1_772_323_200_000  # 2026-03-01


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("oops his name's Jack not Jake, autocorrect strikes again. food mostly!", ("Jack", "Jake")),
        ("sorry my sister's name is actually Marta not Maria", ("Marta", "Maria")),
        ("sorry, I meant Lyon, not Lille", ("Lyon", "Lille")),
        ("actually it's 34, not 43", ("34", "43")),
        ("typo: Biscotti not Biscuit", ("Biscotti", "Biscuit")),
        ("No, it's Tuesday not Thursday!", ("Tuesday", "Thursday")),
        ("oh wait it's Thursday not Tuesday", ("Thursday", "Tuesday")),
        ("turns out it's dust mites, not cats", ("dust mites", "cats")),
    ],
)
def test_a_correction_is_heard_with_its_right_and_wrong_words(text: str, expected: tuple[str, str]) -> None:
    assert said(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "it's sunny, not rainy",  # a description: no cue says it corrects anything
        "I like tea, not coffee",
        "Correction: my manager is Dana, not Priya.",  # a statement: the patterns read it
        "not bad at all",
        "haha yes, not kidding",
    ],
)
def test_what_is_not_a_correction_is_not_heard_as_one(text: str) -> None:
    assert said(text) is None


def _run(texts: list[str], reconciler: FactReconciler) -> tuple[UserFacts, list[FactDecided]]:
    extractor, state, decided = PatternExtractor(), UserFacts("u1"), []
    for i, text in enumerate(texts):
        turn = Utterance(text, "user", "agent-1", None, (f"t{i}",), T0 + i * DAY)
        for event in reconciler.reconcile(state, extractor.extract([turn]), event_time_ms=T0 + i * DAY):
            decided.append(cast(FactDecided, event["change"][1]))
    return state, decided


def _active(state: UserFacts) -> set[tuple[str, str]]:
    return {(f.relation, f.value) for f in state.facts.values()}


@pytest.mark.parametrize("reconciler", [FactReconciler(), FactReconciler(CALLBACK)], ids=["precomputed", "callback"])
def test_a_name_corrected_in_a_later_turn_replaces_the_wrong_one(reconciler: FactReconciler) -> None:
    state, decided = _run(
        ["my boyfriend Jake and I are going to Seville in May", "oops his name's Jack not Jake, autocorrect"],
        reconciler,
    )
    assert ("has_boyfriend", "Jack") in _active(state)
    assert ("has_boyfriend", "Jake") not in _active(state)
    fixed = next(d for d in decided if d["rule"] == "correct-a-value")
    assert (fixed["decision"], fixed["value"]) == ("retract", "Jake")
    assert "said by mistake" in fixed["reason"] and "'jack'" in fixed["reason"]
    stored = next(d for d in decided if d["value"] == "Jack")
    assert stored["decision"] == "replace" and stored["supersedes"] == fixed["fact_id"]
    assert reconciler.engine.working_memory_size() == 0


def test_a_word_inside_a_longer_value_is_put_right_and_the_rest_kept() -> None:
    state, _ = _run(["we adopted a kitten named Biscuit", "typo: Biscotti not Biscuit"], FactReconciler())
    pets = {v for r, v in _active(state) if r == "has_pet"}
    assert pets == {"kitten named Biscotti"}


def test_a_correction_that_meets_no_fact_is_dropped_with_the_reason() -> None:
    state, decided = _run(["I live in Lyon", "sorry, I meant Jack, not Jake"], FactReconciler())
    assert _active(state) == {("lives_in", "Lyon")}
    dropped = [d for d in decided if d["relation"] == CORRECTED]
    assert [(d["decision"], d["rule"]) for d in dropped] == [("drop", "drop-unresolved-correction")]
    assert "meets no active fact" in dropped[0]["reason"]


def test_a_single_valued_fact_corrected_leaves_one_value() -> None:
    state, decided = _run(["I'm 43 now", "actually it's 34, not 43"], FactReconciler())
    assert {v for r, v in _active(state) if r == "age_is"} == {"34"}
    assert [d["rule"] for d in decided if d["decision"] == "retract"] == ["correct-a-value"]


def test_the_same_turns_decide_the_same_events() -> None:
    texts = ["my sister Maria lives in Porto", "sorry my sister's name is actually Marta not Maria"]
    assert _run(texts, FactReconciler())[1] == _run(texts, FactReconciler())[1]


def test_a_corrected_date_replaces_the_date_it_corrects() -> None:
    state, decided = _run(
        ["my dentist appointment is on Tuesday", "oh wait it's Thursday not Tuesday"], FactReconciler()
    )
    assert _active(state) == {("dentist_appointment_date", "Thursday")}
    assert [d["rule"] for d in decided if d["decision"] == "retract"] == ["correct-a-value"]
