"""Evidence normalization and the retrieval metrics (LongMemEval's as its official eval_utils.py)."""

from __future__ import annotations

import math

import pytest

from engram.benchmarks.retrieval_metrics import (
    canonical_dia_id,
    ndcg_any_at,
    normalize_evidence,
    recall_all_at,
    recall_any_at,
    recall_at,
)

EXISTING = {"D8:6", "D9:17", "D11:26", "D30:5", "D1:3"}


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("D1:3", "D1:3"), ("D:11:26", "D11:26"), ("D30:05", "D30:5"), ("D", None), ("", None), ("X1:2", None)],
)
def test_canonical_dia_id(raw: str, expected: str | None) -> None:
    assert canonical_dia_id(raw) == expected


def test_normalize_evidence_splits_fixes_and_drops() -> None:
    raw = ["D8:6; D9:17", "D:11:26 D30:05", "D", "D10:19", "D8:6"]
    assert normalize_evidence(raw, EXISTING) == ["D8:6", "D9:17", "D11:26", "D30:5"]


def test_recall_at_k() -> None:
    assert recall_at(["a", "b", "c"], {"a", "c", "z"}, 2) == pytest.approx(1 / 3)
    assert recall_at(["a"], set(), 5) == 0.0


def test_longmemeval_recall_any_and_ndcg() -> None:
    corpus = ["s1", "s2", "s3", "s4"]
    assert recall_any_at(["s3", "s1"], {"s1"}, 1) == 0.0
    assert recall_any_at(["s3", "s1"], {"s1"}, 2) == 1.0
    # gold s2 and s4 at ranks 1 and 3; the official DCG weighs rank 1 and 2 by 1, rank 3 by 1/log2(3)
    got = ndcg_any_at(["s2", "s1", "s4", "s3"], {"s2", "s4"}, corpus, 10)
    assert got == pytest.approx((1 + 1 / math.log2(3)) / 2)
    assert ndcg_any_at(["s1"], set(), corpus, 10) == 0.0


def test_recall_all_needs_every_gold_item_where_recall_any_needs_one() -> None:
    ranked = ["s1", "s3", "s2", "s4"]
    gold = {"s1", "s2"}
    assert (recall_any_at(ranked, gold, 1), recall_all_at(ranked, gold, 1)) == (1.0, 0.0)
    assert (recall_any_at(ranked, gold, 2), recall_all_at(ranked, gold, 2)) == (1.0, 0.0)
    assert (recall_any_at(ranked, gold, 3), recall_all_at(ranked, gold, 3)) == (1.0, 1.0)
    assert (recall_any_at(ranked, {"s9"}, 4), recall_all_at(ranked, {"s9"}, 4)) == (0.0, 0.0)
    # the official script's any()/all() over no gold documents
    assert (recall_any_at(ranked, set(), 4), recall_all_at(ranked, set(), 4)) == (0.0, 1.0)


def test_ndcg_any_at_5_cuts_the_ranking_and_keeps_the_whole_corpus_ideal() -> None:
    corpus = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    ranked = ["s1", "s2", "s3", "s4", "s5", "s6", "s7"]
    # gold at ranks 2 and 5 (weights 1 and 1/log2(5)); ideal = ranks 1 and 2 = 1 + 1
    assert ndcg_any_at(ranked, {"s2", "s5"}, corpus, 5) == pytest.approx((1 + 1 / math.log2(5)) / 2)
    assert ndcg_any_at(ranked, {"s2", "s5"}, corpus, 5) == pytest.approx(0.715338, abs=1e-6)
    # gold at ranks 2 and 6: only rank 2 counts at 5, both at 10
    assert ndcg_any_at(ranked, {"s2", "s6"}, corpus, 5) == pytest.approx(1 / 2)
    assert ndcg_any_at(ranked, {"s2", "s6"}, corpus, 10) == pytest.approx((1 + 1 / math.log2(6)) / 2)
    assert ndcg_any_at(ranked, {"s2", "s5"}, corpus, 1) == 0.0
