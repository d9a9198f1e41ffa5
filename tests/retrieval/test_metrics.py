"""Evidence normalization and the retrieval metrics."""

from __future__ import annotations

import math

import pytest

from processors.retrieval.metrics import canonical_dia_id, ndcg_any_at, normalize_evidence, recall_any_at, recall_at

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
