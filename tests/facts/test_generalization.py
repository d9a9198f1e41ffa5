"""The offline extractor beyond its development set: held-out floors and general phrasing rules.

utterances_holdout2.jsonl was written before the clause/adverb/negation rules and measured
first (P 0.900, R 0.593 with the old patterns); utterances_holdout3.jsonl was written blind after
the first round of rules and measured once (old patterns P 0.900 R 0.571, new P 0.920 R 0.730)
before its misses were looked at. Both are pinned by checksum: a fixture edited to make a number
go up fails here. The floors are regression guards a little under the measured values.

Since clauses about a named relative are read with the first-person patterns too (issue 47: "my
girlfriend Ines is from Madrid" gives ``user.girlfriend is_from Madrid``), three held-out
utterances yield a right fact about the relative that their labels, written to check only that
the speaker gets none, do not list (h16, b26, b31): each counts as a false positive, so the
precision floors sit under the measured 0.959 (all), 0.917 (holdout) and 0.955 (holdout3).
"""

from __future__ import annotations

import argparse
import hashlib

import pytest

from engram.benchmarks import facts as facts_bench
from engram.benchmarks.facts_evaluation import score_labeled
from engram.processors.facts.extractor import PatternExtractor, Utterance, split_clauses
from engram.processors.facts.model import CATEGORIES
from tests.facts.test_extractor import FIXTURES, HOLDOUT, load

HOLDOUT2 = load("utterances_holdout2.jsonl")
HOLDOUT3 = load("utterances_holdout3.jsonl")
PINNED = {
    "utterances_holdout2.jsonl": "af9cb5c34f0c1bda767fa61c1c762494ed9e9dafe587b4f1fa3808d88d88321b",
    "utterances_holdout3.jsonl": "a3b674a8ed991e93f925c3b14bea416aec5264ca1ef36e8f1278089f1f6b6e1b",
    # the natural-speech suite's part kept aside (issue 47), as its author wrote it
    "speech_holdout.jsonl": "16a7e3576c291f103424e50085a745ed41a7ba7985c3296791eca512188e40c8",
}


def triples(text: str) -> list[tuple[str, str, str]]:
    return [(c.subject, c.relation, c.value) for c in PatternExtractor().extract([Utterance(text)])]


@pytest.mark.parametrize("name", sorted(PINNED))
def test_held_out_files_are_unchanged(name: str) -> None:
    digest = hashlib.sha256((FIXTURES / name).read_bytes()).hexdigest()
    assert digest == PINNED[name], f"{name} was edited after it was measured"


def test_new_held_out_sets_cover_every_category_negation_and_no_fact() -> None:
    for rows in (HOLDOUT2, HOLDOUT3):
        assert len(rows) >= 60
        categories = {f["category"] for r in rows for f in r["facts"]}
        assert set(CATEGORIES) | {"negation"} <= categories
        assert sum(1 for r in rows if not r["facts"]) >= 6
    ids = [r["id"] for r in HOLDOUT + HOLDOUT2 + HOLDOUT3]
    assert len(set(ids)) == len(ids)


def test_combined_held_out_precision_and_recall_floors() -> None:
    score = score_labeled(HOLDOUT + HOLDOUT2 + HOLDOUT3, PatternExtractor())
    assert score.precision >= 0.955
    assert score.recall >= 0.94


@pytest.mark.parametrize(
    ("rows", "precision", "recall"),
    [(HOLDOUT, 0.91, 0.8), (HOLDOUT2, 0.97, 0.95), (HOLDOUT3, 0.95, 0.95)],
    ids=["holdout", "holdout2", "holdout3"],
)
def test_each_held_out_file_floor(rows: list[dict[str, object]], precision: float, recall: float) -> None:
    score = score_labeled(rows, PatternExtractor())
    assert score.precision >= precision
    assert score.recall >= recall


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I work at Nokia and I live in Espoo.", [("works_at", "Nokia"), ("lives_in", "Espoo")]),
        ("I work for Valve and live in Bellevue.", [("works_at", "Valve"), ("lives_in", "Bellevue")]),
        ("I live in Quito; I work at Banco Pichincha.", [("lives_in", "Quito"), ("works_at", "Banco Pichincha")]),
        ("I'm from Peru but I live in Madrid.", [("is_from", "Peru"), ("lives_in", "Madrid")]),
        ("I speak Dutch and French.", [("speaks_language", "Dutch"), ("speaks_language", "French")]),
        ("My husband and I live in Perth.", [("lives_in", "Perth")]),
    ],
)
def test_clauses_split_with_subject_carry_over(text: str, expected: list[tuple[str, str]]) -> None:
    assert [(r, v) for _, r, v in triples(text)] == expected


def test_split_clauses_keeps_lists_and_compound_subjects_whole() -> None:
    assert split_clauses("I work at X and live in Y") == ["I work at X", "I live in Y"]
    assert split_clauses("I speak French and Spanish") == ["I speak French and Spanish"]
    assert split_clauses("My wife and I live in Denver") == ["My wife and I live in Denver"]
    assert split_clauses("We moved here, and we love it") == ["We moved here", "we love it"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I now work at Twilio.", ("works_at", "Twilio")),
        ("I currently live in Bristol.", ("lives_in", "Bristol")),
        ("I recently joined Datadog.", ("works_at", "Datadog")),
        ("I'm actually based in Cologne.", ("lives_in", "Cologne")),
        ("I still speak Welsh.", ("speaks_language", "Welsh")),
        ("I also play the trumpet.", ("plays_instrument", "trumpet")),
        ("Just moved to Tallinn!", ("lives_in", "Tallinn")),
    ],
)
def test_adverbs_and_dropped_subjects_are_tolerated(text: str, expected: tuple[str, str]) -> None:
    assert [(r, v) for _, r, v in triples(text)] == [expected]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("I'm no longer at Intel.", ("no_longer_works_at", "Intel")),
        ("I'm not working at Lyft anymore.", ("no_longer_works_at", "Lyft")),
        ("I stopped working for Oracle.", ("no_longer_works_at", "Oracle")),
        ("I don't drink soda anymore.", ("stopped", "drink soda")),
        ("I stopped using Trello.", ("no_longer_uses", "Trello")),
        ("I'm not in Leeds anymore.", ("moved_from", "Leeds")),
        ("I quit sugar three months ago.", ("stopped", "sugar")),
        ("I broke up with my girlfriend.", ("broke_up_with", "girlfriend")),
    ],
)
def test_negation_forms(text: str, expected: tuple[str, str]) -> None:
    assert [(r, v) for _, r, v in triples(text)] == [expected]


@pytest.mark.parametrize(
    "text",
    [
        "I have to say, I like that idea.",
        "I'm going to the gym.",
        "I don't know anymore.",
        "I was thinking about quitting my job at Google.",
        "I'd love to visit Japan someday.",
        "I'm not at the office anymore.",
    ],
)
def test_no_fact_phrasings_stay_empty(text: str) -> None:
    assert triples(text) == []


def test_did_you_know_tells_news_it_does_not_ask() -> None:
    """ "Did you know I ...?" is how people tell news, as "did I mention ...": the statement stands."""
    assert triples("Did you know I started at Figma last week?") == [("user", "works_at", "Figma")]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # ordinary speech (facts/speech.py): a habit, and a story whose compound subject includes the speaker
        ("I teach my kids to swim.", [("user", "does", "teach my kids to swim")]),
        ("My friend and I went to Paris.", [("user", "did", "went to Paris")]),
        ("I got an A on my exam.", [("user", "did", "got an A on my exam")]),
    ],
)
def test_ordinary_speech_is_heard(text: str, expected: list[tuple[str, str, str]]) -> None:
    assert triples(text) == expected


def test_reminder_requests_phrased_as_questions_are_tasks() -> None:
    assert triples("Could you remind me to renew the domain on Monday?") == [
        ("user", "needs_to", "renew the domain on Monday")
    ]


def test_bench_reports_held_out_numbers_separately() -> None:
    parser = argparse.ArgumentParser()
    facts_bench.add_arguments(parser)
    result = facts_bench.run(parser.parse_args(["--turns", "40", "--users", "5", "--naive-facts", "20"]))
    assert result["holdout_files"] == [
        "utterances_holdout.jsonl",
        "utterances_holdout2.jsonl",
        "utterances_holdout3.jsonl",
    ]
    assert result["holdout_utterances"] == len(HOLDOUT) + len(HOLDOUT2) + len(HOLDOUT3)
    for key in ("precision", "recall", "holdout_precision", "holdout_recall", "precision_holdout2", "recall_holdout3"):
        value = result[key]
        assert isinstance(value, float) and 0.0 <= value <= 1.0, key
    held = score_labeled(HOLDOUT + HOLDOUT2 + HOLDOUT3, PatternExtractor())
    assert result["holdout_recall"] == round(held.recall, 4)
