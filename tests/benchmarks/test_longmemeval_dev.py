"""The LongMemEval bench's dev set: oracle haystacks padded with other questions' sessions."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from engram.benchmarks import longmemeval
from engram.benchmarks.longmemeval import excluded_ids, with_distractors

TOPICS = (
    ("my sourdough starter needs feeding twice a day", "How often do I feed my sourdough starter?"),
    ("I repaired the bicycle chain with a new master link", "What did I use to repair the bicycle chain?"),
    ("our cat Miso hides under the radiator during storms", "Where does Miso hide during storms?"),
    ("the violin teacher said to practise scales slowly", "What did the violin teacher tell me to practise?"),
)


def _item(n: int) -> dict[str, Any]:
    text, question = TOPICS[n]
    return {
        "question_id": f"q{n}",
        "question_type": "single-session-user",
        "question": question,
        "answer": "",
        "question_date": "2023/01/01 (Sun) 10:00",
        "haystack_session_ids": [f"answer_{n}"],
        "haystack_dates": [f"2023/01/0{n + 1} (Sun) 09:00"],
        "haystack_sessions": [[{"role": "user", "content": text, "has_answer": True}]],
        "answer_session_ids": [f"answer_{n}"],
    }


def test_each_haystack_gets_other_questions_sessions_and_keeps_its_own() -> None:
    items = [_item(n) for n in range(4)]
    padded = with_distractors(items, 2)
    assert padded == with_distractors(items, 2)  # deterministic
    for n, item in enumerate(padded):
        ids = item["haystack_session_ids"]
        assert len(ids) == len(item["haystack_sessions"]) == 3
        assert f"answer_{n}" in ids
        borrowed = [i for i in ids if i != f"answer_{n}"]
        assert all(not i.startswith("answer") for i in borrowed)  # only the question's own gold is "answer..."
        assert all(not i.startswith(f"d{n}_") for i in borrowed)  # never its own session twice
        own = ids.index(f"answer_{n}")
        assert item["haystack_sessions"][own] == items[n]["haystack_sessions"][0]
        # every session keeps its own timeline's date
        owners = [int(i.removeprefix("answer_")) if i.startswith("answer") else int(i[1:].split("_")[0]) for i in ids]
        assert item["haystack_dates"] == [f"2023/01/0{a + 1} (Sun) 09:00" for a in owners]
    assert with_distractors([{**i, "haystack_dates": []} for i in items], 2)[0]["haystack_dates"] == []


def test_the_bench_runs_on_a_padded_oracle_file_and_excludes_test_ids(tmp_path: Path) -> None:
    data = tmp_path / "oracle.json"
    data.write_text(json.dumps([_item(n) for n in range(4)]))
    test_file = tmp_path / "test.json"
    test_file.write_text(json.dumps([_item(3)]))
    assert excluded_ids(test_file) == {"q3"}
    args = argparse.Namespace(
        data=data, preset="balanced", aggregate="max", roles="user", limit=0, distractors=2, exclude=test_file
    )
    result = longmemeval.run(args)
    assert result["questions"] == 3
    assert result["excluded"] == 1
    # each question shares its distinctive words with its own session only
    assert result["recall_any@5"] == 1.0
    assert result["ndcg_any@10"] == 1.0


def test_the_bench_prints_the_official_metrics_and_leaves_abstention_out(tmp_path: Path) -> None:
    assistant_evidence = {
        **_item(2),
        "question_id": "q_assistant",
        "question": "Which name did you suggest for my greyhound?",
        "haystack_session_ids": ["answer_9"],
        "haystack_sessions": [
            [
                {"role": "user", "content": "suggest a name for my new greyhound", "has_answer": False},
                {"role": "assistant", "content": "call the greyhound Pepper", "has_answer": True},
            ]
        ],
        "answer_session_ids": ["answer_9"],
    }
    abstention = {**_item(3), "question_id": "q3_abs"}
    data = tmp_path / "oracle.json"
    data.write_text(json.dumps([_item(0), _item(1), assistant_evidence, abstention]))
    args = argparse.Namespace(
        data=data, preset="balanced", aggregate="max", roles="user", limit=0, distractors=2, exclude=None
    )
    result = longmemeval.run(args)
    assert result["questions"] == 3  # the _abs question stays out
    assert result["turn_questions"] == 2  # no user turn of q_assistant has the answer
    for name in ("recall_all@5", "recall_all@10", "ndcg_any@5", "ndcg_any@10"):
        assert result[name] == 1.0, name
    for name in ("turn_recall_any@5", "turn_recall_all@5", "turn_recall_any@10", "turn_recall_all@10"):
        assert result[name] == 1.0, name


def test_lists_read_from_qdrant_rank_sessions_as_the_views_own(tmp_path: Path) -> None:
    """Issue 50: the session ranking is the same when System 1's lists come from Qdrant, and when
    the view holds one turn of each haystack and the rest is read from Qdrant."""
    data = tmp_path / "oracle.json"
    data.write_text(json.dumps([_item(n) for n in range(4)]))
    args = argparse.Namespace(
        data=data, preset="balanced", aggregate="max", roles="user", limit=0, distractors=3, exclude=None,
        qdrant_lists=True, hot_set=1, view_hot_turns=1,
    )  # fmt: skip
    result = longmemeval.run(args)
    for tier in ("lists_from_qdrant", "hot_set"):
        tiered = result[tier]
        assert isinstance(tiered, dict)
        for name in ("recall_all@5", "recall_any@5", "ndcg_any@10"):
            assert tiered[name] == result[name], (tier, name)
    capped = result["hot_set"]
    assert isinstance(capped, dict)
    assert capped["cold_reads_per_question"] > 0
    worker = result["view_hot_set"]  # the worker's own view, one turn of each user in RAM
    assert isinstance(worker, dict)
    for name in ("recall_all@5", "recall_any@5", "ndcg_any@10"):
        assert worker[name] == result[name], name
    assert worker["ram_share"] < 0.5
