"""Budgeted selection: pinned (procedural/policy) items first, then the 0/1 knapsack on the rest."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engram.processors.compiler.items import Scored
from engram.processors.compiler.knapsack import KnapsackConfig, solve


@dataclass(frozen=True, slots=True)
class Chosen:
    pinned: list[Scored]
    rest: list[Scored]
    method: str
    notes: list[str]


def select(pool: Sequence[Scored], budget: int, config: KnapsackConfig) -> Chosen:
    """Pinned items by score (ties by id) while they fit, then the knapsack over the remaining budget.

    Pinned items have unbounded utility (seed 001 eq. 2) but the budget is a hard limit: a pinned
    item that no longer fits is left out and named in `notes`.
    """
    notes: list[str] = []
    room = budget
    pinned: list[Scored] = []
    for item in sorted((s for s in pool if s.pinned), key=lambda s: (-s.score, s.node_id)):
        if item.tokens <= room:
            pinned.append(item)
            room -= item.tokens
        else:
            notes.append(f"pinned {item.node_id} ({item.tokens} tokens) over budget")
    rest = [s for s in pool if not s.pinned]
    result = solve([max(0.0, s.score) for s in rest], [s.tokens for s in rest], room, config)
    return Chosen(pinned, [rest[i] for i in result.chosen], result.method, notes)
