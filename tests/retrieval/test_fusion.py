"""Fusion rules against hand-computed values."""

from __future__ import annotations

import pytest

from engram.processors.retrieval.fusion import Normalization, convex, normalized, rrf
from engram.processors.retrieval.types import Candidate


def _list(*pairs: tuple[str, float]) -> list[Candidate]:
    return [Candidate(node_id, score, "x") for node_id, score in pairs]


VECTOR = _list(("a", 0.9), ("b", 0.5), ("c", 0.1))
TEXT = _list(("c", 12.0), ("d", 4.0))


def test_rrf_sums_reciprocal_ranks() -> None:
    fused = {c.node_id: c.score for c in rrf([VECTOR, TEXT], k=60)}
    assert fused == pytest.approx({"a": 1 / 61, "b": 1 / 62, "c": 1 / 63 + 1 / 61, "d": 1 / 62})
    assert [c.node_id for c in rrf([VECTOR, TEXT], k=60)] == ["c", "a", "b", "d"]


def test_minmax_convex_gives_missing_candidates_the_list_floor() -> None:
    fused = {c.node_id: c.score for c in convex([VECTOR, TEXT], (0.3, 0.7), Normalization.MINMAX)}
    # vector: a=1, b=0.5, c=0; text: c=1, d=0; missing -> 0 (the floor of min-max)
    assert fused == pytest.approx({"a": 0.3, "b": 0.15, "c": 0.7, "d": 0.0})


def test_zscore_normalization() -> None:
    z = normalized(TEXT, Normalization.ZSCORE)
    assert z == pytest.approx({"c": 1.0, "d": -1.0})
    fused = {c.node_id: c.score for c in convex([VECTOR, TEXT], (0.5, 0.5), Normalization.ZSCORE)}
    assert fused["d"] == pytest.approx(0.5 * min(normalized(VECTOR, Normalization.ZSCORE).values()) - 0.5)


def test_ties_keep_first_appearance() -> None:
    a, b = _list(("x", 1.0)), _list(("y", 1.0))
    assert [c.node_id for c in convex([a, b], (0.5, 0.5))] == ["x", "y"]
    assert [c.node_id for c in rrf([a, b])] == ["x", "y"]


def test_constant_and_empty_lists() -> None:
    assert normalized(_list(("x", 2.0), ("y", 2.0)), Normalization.MINMAX) == {"x": 1.0, "y": 1.0}
    assert normalized([], Normalization.ZSCORE) == {}
    assert [c.node_id for c in convex([[], TEXT], (0.5, 0.5))] == ["c", "d"]
