"""Ordinary speech (facts/speech.py), relative times (facts/when.py), instructions only where they
are instructions, and the reply a turn answers (facts/context.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.processors.facts import FactReconciler, UserFacts
from engram.processors.facts.context import confirmed, restated
from engram.processors.facts.extractor import PatternExtractor, Utterance
from engram.processors.facts.matching import value_similarity
from engram.processors.facts.model import CandidateFact
from engram.processors.facts.speech import read_clause, restore_subject
from engram.processors.facts.when import DAY_MS, parsed, resolve

THURSDAY = int(datetime(2026, 3, 12, 15, 4, tzinfo=UTC).timestamp() * 1000)


def day(ms: int | None) -> str:
    assert ms is not None
    return datetime.fromtimestamp(ms / 1000, tz=UTC).date().isoformat()


def heard(text: str, time_ms: int | None = THURSDAY) -> list[tuple[str, str, str]]:
    facts = PatternExtractor().extract([Utterance(text, time_ms=time_ms)])
    return [(f.subject, f.relation, f.value) for f in facts]


@pytest.mark.parametrize(
    ("clause", "relation", "value"),
    [
        ("I went to an LGBTQ support group", "did", "went to an LGBTQ support group"),
        ("I have been experimenting with sourdough lately", "is_doing", "experimenting with sourdough"),
        ("I am training for a marathon", "is_doing", "training for a marathon"),
        ("we donate to an animal shelter every month", "does", "donate to an animal shelter"),
        ("I am going to repaint the kitchen", "plans_to", "repaint the kitchen"),
        ("I think remote work is overrated", "thinks", "remote work is overrated"),
        ("I used to compete in dance competitions", "did", "compete in dance competitions"),
    ],
)
def test_a_first_person_clause_says_what_the_speaker_did_does_plans_or_thinks(
    clause: str, relation: str, value: str
) -> None:
    found = read_clause(clause)
    assert found is not None
    assert (found.subject, found.relation, found.value) == ("user", relation, value)


@pytest.mark.parametrize(
    "clause",
    [
        "I saw your painting",  # about the listener
        "I love it",  # a pronoun is no value
        "I guess so",  # talk, not a fact
        "I am doing great",  # how one is, said to be polite
        "I am going to the gym",  # a place, not a plan
        "I think that's awesome",  # an opinion of nothing named
        "my code keeps crashing",  # about a thing, not the speaker
    ],
)
def test_clauses_that_state_nothing_yield_nothing(clause: str) -> None:
    assert read_clause(clause) is None


def test_chat_that_drops_the_subject_is_read_as_the_speaker() -> None:
    assert restore_subject("Lost my job as a banker yesterday") == "I lost my job as a banker yesterday"
    assert (
        restore_subject("Been doing some promotion for my business")
        == "I have been doing some promotion for my business"
    )
    assert restore_subject("Dancing with them is fun") == "Dancing with them is fun"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a value that names its thing only through a pronoun, the listener, or a run-on: no fact
        ("I'm working on one with my group called Finding Home.", []),
        ("Hoping to hear back from them soon, though I assume a few will be rejected.", []),
        ("I should really try making one or just pay you a visit and try one for myself!", []),
        ("I named her Tilly, and she's always with me while I write.", []),
        ("I decided to include this at the beginning.", []),
        ("I've had them for 3 years now", []),
        # ... while a determiner or an idiom is no pronoun
        ("I make this honey garlic chicken a lot.", [("user", "does", "make this honey garlic chicken")]),
        ("We made it to the top", [("user", "did", "made it to the top")]),
        # an imperative ending in "ing" is no progressive
        ("bring a jacket, it's freezing out there", []),
        # their view of the speaker is no fact the speaker stated
        ("my friend thinks i should move to Berlin, thoughts?", []),
        # "and love ..." shares the subject of the clause it follows, not the "I" of "I'm sure"
        ("I'm sure people will recognise you as the author and love the book even more.", []),
    ],
)
def test_whole_values_only(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert heard(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a "did" whose time is ahead is an event coming, or a plan
        ("got a job interview tomorrow morning", [("user", "has_event", "job interview")]),
        ("I've got a gaming tournament next month", [("user", "has_event", "gaming tournament")]),
        ("we're adopting a cat next month", [("user", "plans_to", "adopting a cat")]),
        # progressives the table names
        ("been working on my portfolio site all week", [("user", "working_on", "my portfolio site")]),
        ("I'm loving experimenting with flavors right now.", [("user", "likes", "experimenting with flavors")]),
        # "been" and a state, not an event
        ("I've been busy volunteering at the shelter", [("user", "has_been", "busy volunteering at the shelter")]),
        ("Been a busy week!", []),
        ("Yeah, I've been there before and loved it!", []),
        ("I've been wanting to play this one for a while", []),
        ("I've always felt a strong connection to art.", [("user", "feels", "a strong connection to art")]),
        # an event told in an opening clause, or told to the listener
        ("Since I lost my job at Door Dash, things have been tough.", [("user", "did", "lost my job at Door Dash")]),
        ("I'm so excited to tell you I started a yoga class with a colleague - it's awesome!",
         [("user", "did", "started a yoga class with a colleague")]),
        ("Some stuff has been going on; last week I dropped off cookies at the shelter.",
         [("user", "did", "dropped off cookies at the shelter")]),
        ("gave a talk at PyCon last year, still cringe thinking about it", [("user", "did", "gave a talk at PyCon")]),
        ("I graduated last week!", [("user", "did", "graduated")]),
        ("every sunday i call my grandma", [("user", "does", "call my grandma")]),
        ("Painting landscapes is my favorite!", [("user", "likes", "Painting landscapes")]),
        ("I'm off to do some taekwondo!", [("user", "plans_to", "do some taekwondo")]),
        # an employer said by the job, by the hiring, by an internship; a last day without "my"
        ("my job at Google is great", [("user", "works_at", "Google")]),
        ("work at KPMG has been brutal, 60 hour weeks", [("user", "works_at", "KPMG")]),
        ("Google hired me last month", [("user", "works_at", "Google")]),
        ("Maria hired me to babysit", []),
        ("I'm interning at NASA this summer", [("user", "works_at", "NASA")]),
        ("last day at KPMG was friday", [("user", "no_longer_works_at", "KPMG")]),
        ("Since I lost my job at Door Dash, things have been tough.", [("user", "did", "lost my job at Door Dash")]),
        # a place after "in" is no time: no date of the event made of it
        ("the conference is in Lisbon next month", []),
        ("my plan is to move to Canada", [("user", "plans_to", "move to Canada")]),
        ("I'm not really into horror movies", [("user", "dislikes", "horror movies")]),
        ("I sing in a choir", [("user", "does", "sing in a choir")]),
        ("I'm from a small town in Ohio", [("user", "is_from", "Ohio")]),
        ("I own a dog", [("user", "has_pet", "dog")]),
        ("I know some Mandarin", [("user", "speaks_language", "Mandarin")]),
        ("I'm bilingual in English and French",
         [("user", "speaks_language", "English"), ("user", "speaks_language", "French")]),
        ("I have celiac", [("user", "has_condition", "celiac")]),
        ("we got two guinea pigs", [("user", "has_pet", "two guinea pigs")]),
        ("I manage a team of 10 at Amazon", [("user", "works_at", "Amazon")]),
        ("I spent last weekend in Vermont", [("user", "did", "spent last weekend in Vermont")]),
        # studying for an exam is what the speaker is doing, not a subject called "for the bar exam"
        ("I'm studying for the bar exam", [("user", "is_doing", "studying for the bar exam")]),
        ("Emma and I got engaged!", [("user", "has_partner", "Emma")]),
        # a trade named by its tool; a liking said as never having enough
        ("I'm a senior iOS developer", [("user", "works_as", "senior iOS developer")]),
        ("I can't get enough of true crime podcasts", [("user", "likes", "true crime podcasts")]),
        # a child named, said with "we" or "have got"
        ("we've got a daughter named Ava", [("user", "has_daughter", "Ava")]),
        ("we have a son named Leo", [("user", "has_son", "Leo")]),
        # a trip with someone; a filler word is not part of the value
        ("my wife and I are going to Rome next week", [("user", "has_trip", "Rome next week")]),
        ("i have an interview with Stripe on thursday actually",
         [("user", "has_event", "interview with Stripe on thursday")]),
    ],
)  # fmt: skip
def test_what_ordinary_speech_says(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert heard(text) == expected


def test_relative_times_resolve_against_when_they_were_said() -> None:
    assert day(resolve("last Friday", THURSDAY)) == "2026-03-06"
    assert day(resolve("yesterday", THURSDAY)) == "2026-03-11"
    assert day(resolve("two weeks ago", THURSDAY)) == "2026-02-26"
    assert day(resolve("last year", THURSDAY)) == "2025-01-01"
    assert day(resolve("next month", THURSDAY)) == "2026-04-01"
    assert resolve("once", THURSDAY) is None


def test_a_told_event_is_dated_from_the_turn() -> None:
    [fact] = PatternExtractor().extract([Utterance("twisted my knee last Friday playing soccer", time_ms=THURSDAY)])
    assert (fact.relation, fact.value) == ("did", "twisted my knee playing soccer")
    assert day(fact.valid_from_ms) == "2026-03-06"
    [undated] = PatternExtractor().extract([Utterance("twisted my knee last Friday playing soccer")])
    assert undated.valid_from_ms is None  # said at no known time: the source event's time stands


@pytest.mark.parametrize(
    "text",
    ["Keep it up!", "Talk to you later", "Don't worry about the snacks", "Keep going and never give up",
     "Don't forget to take breaks", "Take care of yourself"],
)  # fmt: skip
def test_pleasantries_between_people_are_not_instructions(text: str) -> None:
    assert heard(text) == []


def test_instructions_to_the_assistant_still_are() -> None:
    assert heard("Keep your answers short.") == [("user", "instruction", "Keep your answers short")]
    assert heard("From now on, be blunt with me.") == [("user", "instruction", "be blunt with me")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I switched from Vim to VS Code.", [("user", "no_longer_uses", "Vim"), ("user", "uses", "VS Code")]),
        ("I switched from coffee to tea.", [("user", "no_longer_likes", "coffee"), ("user", "prefers", "tea")]),
        ("I got promoted to senior engineer.", [("user", "works_as", "senior engineer")]),
        ("Correction: my manager is Dana, not Priya.", [("user", "has_manager", "Dana")]),
        ("My interview is on March 3.", [("user", "interview_date", "March 3")]),
        ("My interview got moved to March 5.", [("user", "interview_date", "March 5")]),
        ("I've gotten really into cycling instead of running now",
         [("user", "likes", "cycling"), ("user", "no_longer_likes", "running")]),
        ("I use Neovim instead of VS Code these days",
         [("user", "no_longer_uses", "VS Code"), ("user", "uses", "Neovim")]),
        ("Milo passed away last week", [("user", "died", "Milo")]),
        ("Sarah left, my new manager is Tom", [("user", "has_manager", "Tom")]),
    ],
)  # fmt: skip
def test_changes_say_what_stopped_and_what_replaced_it(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert heard(text) == expected


@pytest.mark.parametrize(
    ("before", "after", "gone", "now"),
    [
        ("I love running", "I've gotten really into cycling instead of running now", ("likes", "running"),
         ("likes", "cycling")),
        ("I use VS Code", "I use Neovim instead of VS Code these days", ("uses", "VS Code"), ("uses", "Neovim")),
        ("I have a cat named Milo", "Milo passed away last week", ("has_pet", "cat named Milo"), None),
        ("my manager is Sarah", "Sarah left, my new manager is Tom", ("has_manager", "Sarah"), ("has_manager", "Tom")),
        ("I'm a teacher", "I quit teaching and became a UX designer", ("works_as", "teacher"),
         ("works_as", "UX designer")),
        ("I'm on parental leave", "back at work this week", ("current_status", "on parental leave"), None),
        ("I'm on a keto diet", "quit keto, it wasn't for me", ("diet_is", "keto"), None),
        ("I'm in Tokyo for a conference", "back home in Boston now", ("currently_in", "Tokyo"), None),
        ("I play tennis every Sunday", "I haven't played tennis since my injury", ("plays", "tennis"), None),
        ("I'm looking for a job", "I got the job at Shopify!", ("works_at", "-"), ("works_at", "Shopify")),
        ("I own a road bike", "my bike got stolen last night", ("owns", "road bike"), None),
    ],
)  # fmt: skip
def test_a_change_retracts_what_it_replaces(
    before: str, after: str, gone: tuple[str, str], now: tuple[str, str] | None
) -> None:
    extractor, reconciler, state = PatternExtractor(), FactReconciler(), UserFacts("u1")
    for i, text in enumerate((before, after)):
        reconciler.reconcile(state, extractor.extract([Utterance(text)]), event_time_ms=THURSDAY + i * DAY_MS)
    active = {(f.relation, f.value) for f in state.facts.values()}
    assert gone not in active
    assert now is None or now in active


def test_yes_thats_right_confirms_the_restatement_it_answers() -> None:
    assert restated("So you're at Stripe now?") == "I am at Stripe now"
    answer = confirmed(Utterance("yep, that's right"), "So you're at Stripe now?")
    assert answer is not None
    assert PatternExtractor().extract([answer])[0].value == "Stripe"
    assert confirmed(Utterance("yep, and I also run"), "So you're at Stripe now?") is None
    assert confirmed(Utterance("yes"), "") is None


def test_two_dates_are_two_values_not_a_misspelling() -> None:
    """A corrected date replaces the old one: "march 12" is no near-duplicate of "march 10"."""
    assert value_similarity("march 12", "march 10") == 0.0
    assert value_similarity("google", "googel") > 0.6
    reconciler, state = FactReconciler(), UserFacts("u")
    for t, value in ((0, "March 10"), (1, "March 12")):
        reconciler.reconcile(state, [CandidateFact("user", "interview_date", value, 0.9)], event_time_ms=t)
    [fact] = state.facts.values()
    assert (fact.value, fact.horizon) == ("March 12", "long_term")


def test_a_resolution_cached_by_its_shape_equals_dateparsers_own_on_every_day() -> None:
    """The cache keys an expression that moves with the day by its weekday and one that names a
    month or year by its month (facts/when.py): over two years of days, the answers are dateparser's."""
    expressions = ("yesterday", "last friday", "next tuesday", "two weeks ago", "last week", "last month",
                   "next month", "last year", "the day before yesterday", "in two weeks", "on march 3")  # fmt: skip
    start = int(datetime(2023, 1, 1, tzinfo=UTC).timestamp() * 1000)
    for offset in range(0, 730, 11):
        day = start + offset * DAY_MS
        for expression in expressions:
            assert resolve(expression, day + 3_600_000) == parsed(expression, day)[0], (expression, offset)
