"""Personalized PageRank over a candidate subgraph, in process (numpy power iteration).

r ← d·(P·r + m·p) + (1 − d)·p, where P is the column-stochastic transition matrix of the weighted
edges, p the personalization vector (the seeds, normalized) and m the mass sitting on dangling
nodes, returned to the seeds. Deterministic: no randomness, a fixed iteration order, and ties in the
input resolved by the caller's node order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class PprConfig:
    """Damping d (the paper uses 0.85), L1 tolerance, an iteration cap, and edge direction.

    Memory edges (NEXT, CAUSAL, REF) are followed both ways by default: relevance flows from an
    effect back to its cause as much as forward.

    `substochastic`: a node's out-weights are divided by max(1, their sum) rather than by their sum,
    so weights read as probabilities: a node whose edges weigh less than 1 in total sends the rest
    of its mass back to the seeds. Weak links (e.g. temporal adjacency) then carry less relevance
    than strong ones (causal, reference) even for a node that has only weak links.
    """

    damping: float = 0.85
    tolerance: float = 1e-8
    max_iterations: int = 100
    directed: bool = False
    substochastic: bool = False

    def __post_init__(self) -> None:
        if not 0.0 < self.damping < 1.0:
            msg = f"damping must be in (0, 1), got {self.damping}"
            raise ValueError(msg)
        if self.max_iterations < 1 or self.tolerance <= 0:
            msg = "max_iterations must be >= 1 and tolerance > 0"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class PprResult:
    scores: FloatArray
    iterations: int
    converged: bool


@dataclass(frozen=True, slots=True)
class Transitions:
    """P as an edge list (P[dst, src] = share) and each node's leak back to the seeds.

    The subgraphs are small (tens to hundreds of nodes), where building a scipy matrix costs more
    than the whole iteration: P·r is one `np.bincount` over the edges.
    """

    n: int
    src: npt.NDArray[np.int64]
    dst: npt.NDArray[np.int64]
    share: FloatArray
    leak: FloatArray

    def step(self, r: FloatArray) -> FloatArray:
        """P·r."""
        return np.bincount(self.dst, weights=self.share * r[self.src], minlength=self.n).astype(np.float64, copy=False)


def transitions(
    n: int,
    src: npt.NDArray[np.int64],
    dst: npt.NDArray[np.int64],
    weight: FloatArray,
    directed: bool,
    substochastic: bool = False,
) -> Transitions:
    """P (P[j, i] = w(i→j) / Σ_k w(i→k), or / max(1, Σ) when substochastic) and, per node, the
    share of its mass that has nowhere to go (1 for a dangling node) and returns to the seeds."""
    if not directed:
        src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
        weight = np.concatenate([weight, weight])
    keep = (weight > 0) & (src != dst)
    src, dst, weight = src[keep], dst[keep], weight[keep]
    out_weight = np.bincount(src, weights=weight, minlength=n).astype(np.float64)
    divisor = np.maximum(out_weight, 1.0) if substochastic else np.where(out_weight > 0, out_weight, 1.0)
    leak = 1.0 - np.minimum(out_weight / divisor, 1.0)
    return Transitions(n, src, dst, weight / divisor[src], leak)


def personalized_pagerank(
    n: int,
    src: npt.NDArray[np.int64],
    dst: npt.NDArray[np.int64],
    weight: FloatArray,
    personalization: FloatArray,
    config: PprConfig,
) -> PprResult:
    """PPR scores (summing to 1) over nodes 0..n-1. A zero personalization means uniform."""
    if n == 0:
        return PprResult(np.zeros(0), 0, True)
    p = np.asarray(personalization, dtype=np.float64).clip(min=0.0)
    total = p.sum()
    p = p / total if total > 0 else np.full(n, 1.0 / n)
    moves = transitions(n, src, dst, np.asarray(weight, dtype=np.float64), config.directed, config.substochastic)
    d = config.damping
    r = p.copy()
    for iteration in range(1, config.max_iterations + 1):
        nxt = d * moves.step(r)
        nxt += (d * float(moves.leak @ r) + (1.0 - d)) * p
        delta = float(np.abs(nxt - r).sum())
        r = nxt
        if delta < config.tolerance:
            return PprResult(r, iteration, True)
    return PprResult(r, config.max_iterations, False)


def ppr_scores(
    node_ids: Sequence[str],
    edges: Sequence[tuple[str, str, float]],
    seeds: Mapping[str, float],
    config: PprConfig,
) -> FloatArray:
    """PPR of each of `node_ids`, aligned with it; edges to nodes outside `node_ids` are ignored."""
    index = {node_id: i for i, node_id in enumerate(node_ids)}
    pairs = [(index[s], index[t], w) for s, t, w in edges if s in index and t in index]
    src = np.fromiter((s for s, _, _ in pairs), dtype=np.int64, count=len(pairs))
    dst = np.fromiter((t for _, t, _ in pairs), dtype=np.int64, count=len(pairs))
    weight = np.fromiter((w for _, _, w in pairs), dtype=np.float64, count=len(pairs))
    personalization = np.zeros(len(node_ids))
    for node_id, value in seeds.items():
        if node_id in index:
            personalization[index[node_id]] += value
    scores = personalized_pagerank(len(node_ids), src, dst, weight, personalization, config).scores
    return scores[[index[n] for n in node_ids]] if len(index) < len(node_ids) else scores


def ppr_by_id(
    node_ids: Sequence[str],
    edges: Sequence[tuple[str, str, float]],
    seeds: Mapping[str, float],
    config: PprConfig,
) -> dict[str, float]:
    """PPR keyed by node id; edges to nodes outside `node_ids` are ignored."""
    return dict(zip(node_ids, ppr_scores(node_ids, edges, seeds, config).tolist(), strict=True))
