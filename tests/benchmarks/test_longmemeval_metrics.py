"""The LongMemEval bench's per-question metrics: session level, turn level and the gold turns."""

from __future__ import annotations

import math
from typing import Any

import pytest

from engram.benchmarks.longmemeval import (
    SESSION_METRICS,
    TURN_METRICS,
    UPDATE_METRICS,
    answers_oldest_first,
    haystack_events,
    session_metrics,
    session_time_ms,
    turn_metrics,
    update_order,
)
from engram.processors.embedding import default_embedder
from engram.schemas.changes import change_as
from engram.schemas.records import NodeUpserted


def test_session_metrics_by_hand() -> None:
    corpus = ["a", "b", "c", "x", "y", "z", "w"]
    ranked = ["a", "x", "b", "y", "z", "c", "w"]  # gold a, b, c at ranks 1, 3, 6
    got = session_metrics(ranked, {"a", "b", "c"}, corpus)
    assert set(got) == set(SESSION_METRICS)
    ideal = 1 + 1 + 1 / math.log2(3)  # three gold sessions at ranks 1, 2, 3
    assert got == pytest.approx(
        {
            "recall_any@5": 1.0,
            "recall_all@5": 0.0,  # c is 6th: any@5 and all@5 differ
            "ndcg_any@5": (1 + 1 / math.log2(3)) / ideal,
            "recall_any@10": 1.0,
            "recall_all@10": 1.0,
            "ndcg_any@10": (1 + 1 / math.log2(3) + 1 / math.log2(6)) / ideal,
        }
    )
    assert got["ndcg_any@5"] == pytest.approx(0.619906, abs=1e-6)


def test_turn_metrics_by_hand() -> None:
    ranked = [f"t{i}" for i in range(1, 13)]
    got = turn_metrics(ranked, frozenset({"t2", "t9"}))
    assert set(got) == set(TURN_METRICS)
    assert got == {
        "turn_recall_any@5": 1.0,
        "turn_recall_all@5": 0.0,
        "turn_recall_any@10": 1.0,
        "turn_recall_all@10": 1.0,
    }
    missed = turn_metrics(ranked, frozenset({"t11"}))
    assert missed == {
        "turn_recall_any@5": 0.0,
        "turn_recall_all@5": 0.0,
        "turn_recall_any@10": 0.0,
        "turn_recall_all@10": 0.0,
    }


def _turn(role: str, content: str, has_answer: bool) -> dict[str, Any]:
    return {"role": role, "content": content, "has_answer": has_answer}


def test_gold_turns_are_the_indexed_has_answer_turns_of_answer_sessions() -> None:
    item = {
        "question_id": "q1",
        "answer_session_ids": ["answer_1"],
        "haystack_session_ids": ["s0", "answer_1"],
        "haystack_sessions": [
            [_turn("user", "a has_answer turn outside the answer sessions", True)],
            [
                _turn("user", "I adopted a greyhound called Pepper", True),
                _turn("assistant", "Pepper is a lovely name", True),  # not a key: user turns only
                _turn("user", "thanks for the tips", False),
            ],
        ],
    }
    haystack = haystack_events(item, default_embedder(), frozenset({"user"}))
    assert len(haystack.sessions) == 3  # the three user turns are nodes
    assert len(haystack.answer_turns) == 1
    (gold,) = haystack.answer_turns
    assert haystack.sessions[gold] == "answer_1"
    both = haystack_events(item, default_embedder(), frozenset({"user", "assistant"}))
    assert len(both.answer_turns) == 2


def test_knowledge_update_order_by_hand() -> None:
    # answer_1 is stated first, answer_2 restates the value a day later (listed first in the haystack)
    item = {
        "answer_session_ids": ["answer_1", "answer_2"],
        "haystack_session_ids": ["answer_2", "s0", "answer_1"],
        "haystack_dates": ["2023/05/26 (Fri) 09:00", "2023/05/20 (Sat) 10:00", "2023/05/25 (Thu) 18:30"],
    }
    by_age = answers_oldest_first(item)
    assert by_age == ["answer_1", "answer_2"]
    got = update_order(["s0", "answer_2", "answer_1"], by_age)
    assert set(got) == set(UPDATE_METRICS)
    assert got == {"latest_first": 1.0, "latest_top5": 1.0}
    assert update_order(["answer_1", "answer_2"], by_age) == {"latest_first": 0.0, "latest_top5": 1.0}
    ranked = ["answer_1", "a", "b", "c", "d", "answer_2"]
    assert update_order(ranked, by_age) == {"latest_first": 0.0, "latest_top5": 0.0}
    # an older session left out of the ranking counts as below it; a newest one left out never wins
    assert update_order(["answer_2"], by_age) == {"latest_first": 1.0, "latest_top5": 1.0}
    assert update_order(["answer_1"], by_age) == {"latest_first": 0.0, "latest_top5": 0.0}
    # the same day: the time decides; no dates: the ids' order
    same_day = {
        **item,
        "haystack_dates": ["2023/05/25 (Thu) 08:00", "2023/05/20 (Sat) 10:00", "2023/05/25 (Thu) 18:30"],
    }
    assert answers_oldest_first(same_day) == ["answer_2", "answer_1"]
    assert answers_oldest_first({**item, "haystack_dates": []}) == ["answer_1", "answer_2"]


def test_turns_carry_their_session_date_as_event_time() -> None:
    item = {
        "question_id": "q2",
        "answer_session_ids": ["answer_1"],
        "haystack_session_ids": ["s0", "answer_1"],
        "haystack_dates": ["2023/05/20 (Sat) 10:00", "2023/05/25 (Thu) 18:30"],
        "haystack_sessions": [
            [_turn("user", "my sourdough starter needs feeding", False)],
            [_turn("user", "I feed it twice a day now", True), _turn("user", "and keep it in the fridge", False)],
        ],
    }
    haystack = haystack_events(item, default_embedder(), frozenset({"user"}))
    nodes = [n for n in (change_as(e, NodeUpserted) for e in haystack.events) if n is not None]
    times = [n["event_time_ms"] for n in nodes]
    start = session_time_ms("2023/05/25 (Thu) 18:30")
    assert start == 1_685_039_400_000
    assert times == [session_time_ms("2023/05/20 (Sat) 10:00"), start + 1, start + 2]
