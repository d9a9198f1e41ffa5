"""The natural-speech suite (benchmarks/data/facts/speech*.jsonl): statements as people say them,
each with the triples it must yield. Its part kept aside (speech_holdout.jsonl, pinned by hash in
test_generalization.py) was written in another voice and never read while the extractor was worked
on. These floors are where the extractor stands (issue 47 asks 0.9 / 0.8 on the held-out part; the
note says how far that is), so that no change slides back unseen."""

from __future__ import annotations

import json

import pytest

from engram.benchmarks.facts import LABELED_DIR
from engram.benchmarks.facts_evaluation import score_labeled
from engram.processors.facts.extractor import PatternExtractor

FLOORS = {"speech.jsonl": (0.80, 0.60), "speech_holdout.jsonl": (0.68, 0.34)}


@pytest.mark.parametrize("name", sorted(FLOORS))
def test_the_natural_speech_suite_holds_its_floor(name: str) -> None:
    rows = [json.loads(line) for line in (LABELED_DIR / name).read_text(encoding="utf-8").splitlines() if line]
    score = score_labeled(rows, PatternExtractor())
    precision, recall = FLOORS[name]
    assert score.precision >= precision and score.recall >= recall, score


def test_the_suite_covers_nothing_said_and_both_parts() -> None:
    for name in FLOORS:
        rows = [json.loads(line) for line in (LABELED_DIR / name).read_text(encoding="utf-8").splitlines() if line]
        assert len(rows) >= 60
        assert sum(1 for row in rows if not row["facts"]) >= 15  # statements that must yield nothing
