"""Knapsack reduction: fix the items every optimal solution takes or leaves, before the exact DP.

The classic reduction (Martello & Toth, *Knapsack Problems*, 1990, §2.7) bounds, for each item,
the best value of any solution that decides it the other way: the Dantzig LP bound of the items in
value-density order with that item forced. When the bound is below a feasible value (the greedy
solution's), no optimal solution decides it that way, so it is fixed and the DP runs over the rest
with the budget the fixed items leave. The bounds for every item come from one sort and
`np.searchsorted` over prefix sums.

Fixing only what every optimal solution shares leaves the optimum unchanged; `exact_dp` over all
items is the reference (tests/compiler/test_algorithms.py). A margin of `FIX_MARGIN` (relative)
keeps rounding in the prefix sums from fixing an item whose bound only ties the greedy value.
On compile pools (about 100 items of ~15 tokens under 1,000) most items are fixed, so the DP's
per-item numpy passes run over the few near the greedy break point.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np
import numpy.typing as npt

FIX_MARGIN: Final = 1e-9


@dataclass(frozen=True, slots=True)
class Reduced:
    """Items every optimal solution takes (`taken`), the undecided ones (`free`, in index order)
    and the budget left for them."""

    taken: tuple[int, ...]
    free: tuple[int, ...]
    room: int


def reduce_items(values: Sequence[float], weights: Sequence[int], budget: int) -> Reduced:
    """Split positive-value items into those fixed in, those still free, and the budget left.

    Zero-weight items of positive value are always taken; items of no value or over the budget
    are never taken (neither is listed in `free`).
    """
    free_weight = [i for i, (v, w) in enumerate(zip(values, weights, strict=True)) if v > 0 and w == 0]
    candidates = [i for i, (v, w) in enumerate(zip(values, weights, strict=True)) if v > 0 and 0 < w <= budget]
    if not candidates:
        return Reduced(tuple(free_weight), (), budget)
    order = sorted(candidates, key=lambda i: (-(values[i] / weights[i]), i))
    v = np.array([values[i] for i in order], dtype=np.float64)
    w = np.array([weights[i] for i in order], dtype=np.int64)
    fixed_in, fixed_out = _fixed(v, w, budget)
    taken = [order[p] for p in np.flatnonzero(fixed_in).tolist()]
    room = budget - int(w[fixed_in].sum())
    free = sorted(order[p] for p in np.flatnonzero(~(fixed_in | fixed_out)).tolist())
    return Reduced(tuple(sorted(free_weight + taken)), tuple(free), room)


def _fixed(v: npt.NDArray[np.float64], w: npt.NDArray[np.int64], budget: int) -> tuple[npt.NDArray[np.bool_], ...]:
    """Masks over density-sorted items: in every optimal solution, and in none."""
    m = len(v)
    density = v / w
    pw = np.concatenate([[0], np.cumsum(w)])
    pv = np.concatenate([[0.0], np.cumsum(v)])
    lower = _greedy_value(v, w, budget)
    bar = lower - FIX_MARGIN * max(1.0, abs(lower))
    brk = int(np.searchsorted(pw, budget, side="right")) - 1  # items 0..brk-1 fit whole
    positions = np.arange(m)
    # Leave p out (p < brk): the others in order; with p gone the prefix reaches k >= brk.
    k0 = np.searchsorted(pw, budget + w, side="right") - 1
    rest0 = budget + w - pw[k0]
    frac0 = np.where(k0 < m, rest0 * density[np.minimum(k0, m - 1)], 0.0)
    without = pv[k0] - v + frac0
    fixed_in = (positions < brk) & (without < bar)
    # Take p (p >= brk): v_p plus the LP of the others under budget - w_p. Its prefix ends at
    # k <= brk <= p, so p is not in it; when k == p the fractional item would be p itself, and
    # p's own density (>= every later one) still bounds it.
    cap = budget - w
    k1 = np.searchsorted(pw, np.maximum(cap, 0), side="right") - 1
    rest1 = cap - pw[np.minimum(k1, m)]
    frac1 = np.where(k1 < m, rest1 * density[np.minimum(k1, m - 1)], 0.0)
    with_p = v + pv[k1] + frac1
    fixed_out = (positions >= brk) & (with_p < bar)
    return fixed_in, fixed_out


def _greedy_value(v: npt.NDArray[np.float64], w: npt.NDArray[np.int64], budget: int) -> float:
    """Value of taking density-sorted items while they fit (a feasible lower bound)."""
    room, total = budget, 0.0
    for value, weight in zip(v.tolist(), w.tolist(), strict=True):
        if weight <= room:
            room -= weight
            total += value
    return total
