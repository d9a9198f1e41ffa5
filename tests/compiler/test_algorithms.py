"""PPR against a dense reference, knapsack against brute force, Kahn order, decay math."""

from __future__ import annotations

import math
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.compiler.decay import CONTEXTOS_DECAY, HOUR_MS, DecayConfig, centrality, strength, strengths
from engram.processors.compiler.knapsack import (
    KnapsackConfig,
    exact_dp,
    exact_reduced,
    greedy,
    improve,
    scaled_dp,
    solve,
)
from engram.processors.compiler.order import causal_order
from engram.processors.compiler.ppr import PprConfig, personalized_pagerank, ppr_by_id
from engram.processors.compiler.reduction import Reduced, reduce_items

# --- PPR -------------------------------------------------------------------------------------------


def _dense_ppr(n: int, edges: list[tuple[int, int, float]], p: np.ndarray, d: float) -> np.ndarray:
    """Reference: dense matrix, undirected, dangling mass back to p, 2000 plain iterations."""
    w = np.zeros((n, n))
    for s, t, x in edges:
        if s != t:
            w[t, s] += x
            w[s, t] += x
    out = w.sum(axis=0)
    m = np.divide(w, out, out=np.zeros_like(w), where=out > 0)
    p = p / p.sum()
    r = p.copy()
    for _ in range(2000):
        r = d * (m @ r + r[out == 0].sum() * p) + (1 - d) * p
    return r


@st.composite
def small_graphs(draw: st.DrawFn) -> tuple[int, list[tuple[int, int, float]], np.ndarray]:
    n = draw(st.integers(2, 8))
    edges = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), st.floats(0.1, 3.0)), max_size=16))
    seeds = draw(st.lists(st.floats(0.0, 1.0), min_size=n, max_size=n).filter(lambda v: sum(v) > 0.01))
    return n, edges, np.array(seeds)


@given(small_graphs())
@settings(max_examples=60, deadline=None)
def test_ppr_matches_dense_reference(graph: tuple[int, list[tuple[int, int, float]], np.ndarray]) -> None:
    n, edges, p = graph
    src = np.array([e[0] for e in edges], dtype=np.int64)
    dst = np.array([e[1] for e in edges], dtype=np.int64)
    w = np.array([e[2] for e in edges], dtype=np.float64)
    result = personalized_pagerank(n, src, dst, w, p, PprConfig(tolerance=1e-12, max_iterations=5000))
    assert result.converged
    assert result.scores.sum() == pytest.approx(1.0)
    np.testing.assert_allclose(result.scores, _dense_ppr(n, edges, p, 0.85), atol=1e-8)


def test_ppr_favours_the_seed_and_its_neighbours_and_is_deterministic() -> None:
    ids = ["a", "b", "c", "d", "e"]
    edges = [("a", "b", 1.0), ("b", "c", 1.0), ("d", "e", 1.0)]
    first = ppr_by_id(ids, edges, {"a": 1.0}, PprConfig())
    assert first == ppr_by_id(ids, edges, {"a": 1.0}, PprConfig())
    assert first["a"] > first["c"] > 0 and first["b"] > first["c"]
    assert first["d"] == first["e"] == 0.0


def test_substochastic_weights_leak_mass_back_to_the_seeds() -> None:
    ids = ["seed", "strong", "weak", "far"]
    edges = [("seed", "strong", 1.0), ("seed", "weak", 0.2), ("weak", "far", 0.2)]
    scores = ppr_by_id(ids, edges, {"seed": 1.0}, PprConfig(substochastic=True))
    assert scores["strong"] > scores["weak"] > scores["far"]
    assert sum(scores.values()) == pytest.approx(1.0)


# --- knapsack --------------------------------------------------------------------------------------


def _brute(values: list[float], weights: list[int], budget: int) -> float:
    best = 0.0
    for r in range(len(values) + 1):
        for combo in combinations(range(len(values)), r):
            if sum(weights[i] for i in combo) <= budget:
                best = max(best, sum(values[i] for i in combo))
    return best


instances = st.integers(1, 10).flatmap(
    lambda n: st.tuples(
        st.lists(st.floats(0.0, 10.0), min_size=n, max_size=n),
        st.lists(st.integers(1, 40), min_size=n, max_size=n),
        st.integers(0, 120),
    )
)


@given(instances)
@settings(max_examples=150, deadline=None)
def test_exact_dp_matches_brute_force(instance: tuple[list[float], list[int], int]) -> None:
    values, weights, budget = instance
    dp = exact_dp(values, weights, budget)
    assert dp.weight <= budget
    assert dp.value == pytest.approx(_brute(values, weights, budget), abs=1e-9)
    assert solve(values, weights, budget).value >= greedy(values, weights, budget).value - 1e-9


@given(instances)
@settings(max_examples=100, deadline=None)
def test_scaled_dp_and_local_search_stay_feasible_and_never_lose_to_greedy(
    instance: tuple[list[float], list[int], int],
) -> None:
    values, weights, budget = instance
    scaled = scaled_dp(values, weights, budget, cells=20)
    assert scaled.weight <= budget
    better = improve(scaled, values, weights, budget, rounds=3)
    assert better.weight <= budget and better.value >= scaled.value
    forced = solve(values, weights, budget, KnapsackConfig(exact_cells=0))
    assert forced.weight <= budget
    assert forced.value >= greedy(values, weights, budget).value - 1e-9


pools = st.integers(0, 60).flatmap(
    lambda n: st.tuples(
        st.lists(
            st.one_of(st.just(0.0), st.floats(0.0, 1.0), st.sampled_from([0.1, 0.5, 1.0])), min_size=n, max_size=n
        ),
        st.lists(st.one_of(st.just(0), st.integers(1, 40)), min_size=n, max_size=n),
        st.integers(0, 400),
    )
)


@given(pools)
@settings(max_examples=200, deadline=None)
def test_reduced_dp_finds_the_exact_optimum(instance: tuple[list[float], list[int], int]) -> None:
    """Fixing items by LP bounds never changes the optimum (ties, free and useless items included)."""
    values, weights, budget = instance
    full, reduced = exact_dp(values, weights, budget), exact_reduced(values, weights, budget)
    assert reduced.weight <= budget
    assert reduced.value == pytest.approx(full.value, abs=1e-9)


def test_reduction_leaves_only_the_items_near_the_break_point() -> None:
    # 100 items of 10 tokens with falling value under 300 tokens: the 30 best are certainly in and
    # the rest certainly out. Two equal items at the break point could each be the 30th: both
    # stay free, with the 10 tokens left for one of them.
    values = [1.0 - i / 100 for i in range(100)]
    weights = [10] * 100
    assert reduce_items(values, weights, 300) == Reduced(tuple(range(30)), (), 0)
    tied = values[:29] + [0.7, 0.7] + values[31:]
    assert reduce_items(tied, weights, 300) == Reduced(tuple(range(29)), (29, 30), 10)
    assert exact_reduced(tied, weights, 300).chosen == exact_dp(tied, weights, 300).chosen


def test_dp_beats_greedy_where_density_misleads() -> None:
    # Greedy takes the dense small item and then nothing else fits; the optimum is the two halves.
    values, weights = [3.0, 5.0, 5.0], [1, 5, 5]
    assert greedy(values, weights, 10).value < exact_dp(values, weights, 10).value == 10.0


def test_zero_token_items_are_free() -> None:
    assert exact_dp([1.0, 2.0], [0, 5], 4).chosen == (0,)
    assert greedy([1.0, 2.0], [0, 5], 4).chosen == (0,)


# --- topological order ---------------------------------------------------------------------------


@given(
    st.integers(1, 12).flatmap(
        lambda n: st.tuples(
            st.just(n),
            st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=30),
            st.lists(st.integers(0, 5), min_size=n, max_size=n),
        )
    )
)
@settings(max_examples=100, deadline=None)
def test_kahn_order_respects_every_kept_edge_and_is_permutation_invariant(
    case: tuple[int, list[tuple[int, int]], list[int]],
) -> None:
    n, raw, times = case
    ids = [f"n{i:02d}" for i in range(n)]
    edges = [(ids[a], ids[b]) for a, b in raw]
    time_of = {ids[i]: times[i] for i in range(n)}
    result = causal_order(ids, edges, time_of)
    assert sorted(result.order) == sorted(ids)
    position = {node: i for i, node in enumerate(result.order)}
    dropped = set(result.dropped_edges)
    for src, dst in edges:
        if src != dst and (src, dst) not in dropped:
            assert position[src] < position[dst]
    again = causal_order(list(reversed(ids)), list(reversed(edges)), time_of)
    assert again == result


def test_time_breaks_ties_and_cycles_break_at_the_earliest_node() -> None:
    times = {"a": 3, "b": 1, "c": 2}
    assert causal_order(["a", "b", "c"], [], times).order == ("b", "c", "a")
    cyclic = causal_order(["a", "b", "c"], [("a", "b"), ("b", "c"), ("c", "a")], times)
    # b is the earliest node on the cycle: the edge into it (a → b) is the one dropped.
    assert cyclic.dropped_edges == (("a", "b"),)
    assert cyclic.order == ("b", "c", "a")


# --- decay ---------------------------------------------------------------------------------------


def test_contextos_decay_reproduces_the_papers_table() -> None:
    day = 24 * HOUR_MS
    no_access = DecayConfig(rates=CONTEXTOS_DECAY.rates, default_rate=CONTEXTOS_DECAY.default_rate, beta=0.0)
    assert strength("turn", day, 0, no_access) == pytest.approx(0.9**24, rel=1e-9)  # ≈ 0.08: "0.10"
    assert strength("turn", 7 * day, 0, no_access) < 0.001  # "0.00"
    assert strength("fact", day, 0, no_access) == pytest.approx(0.9995**24)  # 0.99
    assert strength("fact", 7 * day, 0, no_access) == pytest.approx(0.92, abs=0.01)  # "0.93"


def test_decay_uses_the_request_time_and_access_resists_decay() -> None:
    cfg = DecayConfig(rates={"turn": math.log(2)}, beta=0.5, saturation=10)
    assert strength("turn", HOUR_MS, 0, cfg) == pytest.approx(0.5)
    assert strength("turn", -HOUR_MS, 0, cfg) == pytest.approx(1.0)  # newer than the request: age 0
    assert strength("turn", HOUR_MS, 10, cfg) == pytest.approx(0.5 + 0.5)
    assert centrality(0, 10) == 0.0 and centrality(1000, 10) == 1.0
    assert strength("unknown", 10 * HOUR_MS, 0, cfg) == pytest.approx(1.0)  # default rate 0


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["turn", "fact", "policy", "unknown"]),
            st.integers(-10 * HOUR_MS, 10_000 * HOUR_MS),
            st.integers(-3, 500),
        ),
        max_size=40,
    )
)
@settings(max_examples=60, deadline=None)
def test_pool_strengths_equal_the_single_node_formula(nodes: list[tuple[str, int, int]]) -> None:
    kinds, ages, counts = [n[0] for n in nodes], [n[1] for n in nodes], [n[2] for n in nodes]
    expected = [strength(k, a, c, CONTEXTOS_DECAY) for k, a, c in nodes]
    assert strengths(kinds, ages, counts, CONTEXTOS_DECAY) == pytest.approx(expected, rel=1e-12, abs=1e-15)
