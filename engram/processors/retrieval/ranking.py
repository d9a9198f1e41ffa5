"""Turning raw scores into ranked candidates, deterministically."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.types import Candidate


def top_indices(scores: npt.NDArray[np.floating], k: int) -> npt.NDArray[np.intp]:
    """Indices of the k best scores (unordered); ties are resolved later by row."""
    if k <= 0 or scores.shape[0] == 0:
        return np.empty(0, dtype=np.intp)
    if scores.shape[0] <= k:
        return np.arange(scores.shape[0])
    return np.argpartition(-scores, k - 1)[:k]


def ranked_candidates(scored: list[tuple[float, int, int, str]], k: int, source: str) -> list[Candidate]:
    """Best first; ties by owner (user before shared) then row (arrival order): deterministic."""
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [Candidate(node_id, score, source) for score, _, _, node_id in scored[:k]]
