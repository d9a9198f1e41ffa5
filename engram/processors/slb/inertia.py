"""Measuring the Semantic Inertia hypothesis (seed 000 §3.1, Eq. 9) on a query stream.

The SLB can only hit when some cached centroid is within τ_hit (cosine) of the new query. Eq. 9
claims P(sim(q_{i+1}, q_i) > τ) ≈ 1 for continuous dialogue, and the seed reports > 85% of
consecutive queries above 0.85. These functions measure, for a stream of L2-normalized query
vectors, the similarities that decide hits, so a hit rate can be read against its ceiling:

- `consecutive`: sim(q_{i+1}, q_i), Eq. 9 itself;
- `best_recent`: the best similarity to any of the previous `window` queries, the hit ceiling of a
  K-centroid buffer whose centroids are past queries (Algorithm 1's LRU-INSERT(B, q, p*));
- `best_centroid`: the best similarity to a fixed set of centroids (e.g. Atlas concept centroids,
  the buffer of Eq. 14 with every concept staged).

A `SimilarityProfile` summarises one of them: percentiles and the share strictly above τ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.base import Embedder
from engram.processors.slb.concepts import concept_centroids
from engram.processors.slb.config import SlbConfig

Vectors = npt.NDArray[np.float32]
Sims = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class SimilarityProfile:
    """Cosines summarised: count, 10th/50th/90th percentiles, max, and the share strictly above tau."""

    count: int
    p10: float
    p50: float
    p90: float
    max: float
    tau: float
    above_tau: float

    def as_dict(self) -> dict[str, float | int]:
        return {
            "count": self.count,
            "p10": self.p10,
            "p50": self.p50,
            "p90": self.p90,
            "max": self.max,
            "tau": self.tau,
            "share_above_tau": self.above_tau,
        }


def profile(sims: Sims, tau: float) -> SimilarityProfile:
    values = np.asarray(sims, dtype=np.float64).reshape(-1)
    if values.size == 0:
        return SimilarityProfile(0, 0.0, 0.0, 0.0, 0.0, tau, 0.0)
    p10, p50, p90 = (round(float(x), 4) for x in np.percentile(values, (10, 50, 90)))
    return SimilarityProfile(
        int(values.size), p10, p50, p90, round(float(values.max()), 4), tau, round(float((values > tau).mean()), 4)
    )


def consecutive(queries: Vectors) -> Sims:
    """sim(q_{i+1}, q_i) for i = 0..n-2 (rows are unit vectors)."""
    q = np.asarray(queries, dtype=np.float64)
    if q.shape[0] < 2:
        return np.zeros(0, dtype=np.float64)
    out: Sims = np.sum(q[1:] * q[:-1], axis=1)
    return out


def best_recent(queries: Vectors, window: int | None, centroids: Vectors | None = None) -> Sims:
    """For i = 1..n-1: the best sim(q_i, c_j) over the previous `window` j < i (None: all j < i),
    where c_j = q_j, or the centroid filed for query j when `centroids` (one row per query) is given."""
    q = np.asarray(queries, dtype=np.float64)
    c = q if centroids is None else np.asarray(centroids, dtype=np.float64)
    out = np.zeros(max(0, q.shape[0] - 1), dtype=np.float64)
    for i in range(1, q.shape[0]):
        start = 0 if window is None else max(0, i - window)
        out[i - 1] = float((c[start:i] @ q[i]).max())
    return out


def best_centroid(queries: Vectors, centroids: Vectors) -> Sims:
    """For every query: its best similarity to any of the centroids (-1 with no centroid)."""
    q = np.asarray(queries, dtype=np.float64)
    c = np.asarray(centroids, dtype=np.float64)
    if c.shape[0] == 0:
        return np.full(q.shape[0], -1.0)
    out: Sims = (q @ c.T).max(axis=1)
    return out


def inertia_report(
    queries: Sequence[Vectors], turns: Sequence[Vectors], config: SlbConfig
) -> dict[str, dict[str, float | int]]:
    """Eq. 9 measured on several streams (one per conversation), pooled: the cosines that decide
    hits of a K-query buffer, of any query buffer, and of Atlas concept centroids built from each
    conversation's turns; plus consecutive dialogue turns, the continuous dialogue Eq. 9 is about."""
    parts: dict[str, list[Sims]] = {}
    k = config.capacity
    names = (
        "sim(q_i+1, q_i): Eq. 9 on the question stream",
        f"best sim to the previous {k} questions: the hit ceiling of a K={k} query-centroid buffer",
        "best sim to every previous question: the hit ceiling of a query-centroid buffer of any K",
        "best sim to any Atlas concept centroid: the hit ceiling of concept centroids",
        "sim(t_i+1, t_i): consecutive dialogue turns (the continuous dialogue of Eq. 9)",
    )
    for q, t in zip(queries, turns, strict=True):
        centroids = concept_centroids([str(i) for i in range(len(t))], t).centroids
        values = (consecutive(q), best_recent(q, k), best_recent(q, None), best_centroid(q, centroids), consecutive(t))
        for name, value in zip(names, values, strict=True):
            parts.setdefault(name, []).append(value)
    return {name: profile(np.concatenate(v), config.tau_hit).as_dict() for name, v in parts.items()}


def embedder_inertia(
    embedder: Embedder, questions: Sequence[Sequence[str]], turns: Sequence[Sequence[str]], config: SlbConfig
) -> dict[str, object]:
    """`inertia_report` with another embedder, from texts: per stream its questions and its turns."""
    q = [embedder.embed(list(texts)) for texts in questions]
    t = [embedder.embed(list(texts)) for texts in turns]
    return {"embedder": embedder.name, "streams": len(q), **inertia_report(q, t, config)}
