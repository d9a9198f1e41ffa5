"""Fusing ranked candidate lists (vector, BM25) into one ranking.

- ``rrf``: Reciprocal Rank Fusion (Cormack et al. 2009), score = sum_r w_r / (k + rank_r). Uses
  ranks only, so it ignores how far apart the scores are.
- ``convex``: a convex combination of per-list normalized scores (min-max or z-score over the
  retrieved list); a candidate absent from a list gets that list's lowest normalized score.

Ties keep first-appearance order (lists in the order given, then rank): deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum

import numpy as np

from engram.processors.retrieval.types import Candidate

FUSED_SOURCE = "hybrid"


class Normalization(StrEnum):
    MINMAX = "minmax"
    ZSCORE = "zscore"


def _first_seen(rankings: Sequence[Sequence[Candidate]]) -> dict[str, int]:
    order: dict[str, int] = {}
    for ranking in rankings:
        for cand in ranking:
            order.setdefault(cand.node_id, len(order))
    return order


def _ranked(scores: dict[str, float], order: dict[str, int], source: str) -> list[Candidate]:
    ids = sorted(scores, key=lambda nid: (-scores[nid], order[nid]))
    return [Candidate(nid, scores[nid], source) for nid in ids]


def rrf(
    rankings: Sequence[Sequence[Candidate]], weights: Sequence[float] | None = None, k: int = 60
) -> list[Candidate]:
    """Reciprocal Rank Fusion; ranks start at 1."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    scores: dict[str, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, cand in enumerate(ranking, start=1):
            scores[cand.node_id] = scores.get(cand.node_id, 0.0) + weight / (k + rank)
    return _ranked(scores, _first_seen(rankings), FUSED_SOURCE)


def normalized(ranking: Sequence[Candidate], how: Normalization) -> dict[str, float]:
    """Per-list normalized scores; a constant list maps to 1.0 (min-max) or 0.0 (z-score)."""
    if not ranking:
        return {}
    raw = np.array([c.score for c in ranking], dtype=np.float64)
    if how is Normalization.MINMAX:
        span = float(raw.max() - raw.min())
        values = (raw - raw.min()) / span if span > 0 else np.ones_like(raw)
    else:
        std = float(raw.std())
        values = (raw - raw.mean()) / std if std > 0 else np.zeros_like(raw)
    return {c.node_id: float(v) for c, v in zip(ranking, values, strict=True)}


def convex(
    rankings: Sequence[Sequence[Candidate]], weights: Sequence[float], how: Normalization = Normalization.MINMAX
) -> list[Candidate]:
    """sum_r w_r * norm_r(score); missing candidates take list r's minimum normalized score."""
    order = _first_seen(rankings)
    per_list = [normalized(r, how) for r in rankings]
    floors = [min(n.values()) if n else 0.0 for n in per_list]
    scores = {
        nid: sum(w * n.get(nid, floor) for w, n, floor in zip(weights, per_list, floors, strict=True)) for nid in order
    }
    return _ranked(scores, order, FUSED_SOURCE)
