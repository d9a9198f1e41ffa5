"""Causal/temporal reading order of the selected items (seed 001 §6.2: Kahn's algorithm).

Edges u → v (NEXT, CAUSAL, ...) among the selected items mean "u must be read before v". Among the
items that are ready, the earliest event time goes first, then the smaller id, so the order is total
and deterministic. When every remaining item waits on another (a cycle), the earliest remaining item
by (event time, id) is released and the edges into it are dropped and reported: the same input
always breaks the same edges.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Ordering:
    order: tuple[str, ...]
    dropped_edges: tuple[tuple[str, str], ...]


def causal_order(
    node_ids: Sequence[str], edges: Sequence[tuple[str, str]], event_time_ms: Mapping[str, int]
) -> Ordering:
    """Topological order of `node_ids` under `edges` (edges touching other nodes are ignored)."""
    nodes = list(dict.fromkeys(node_ids))
    present = set(nodes)
    successors: dict[str, set[str]] = {n: set() for n in nodes}
    predecessors: dict[str, set[str]] = {n: set() for n in nodes}
    for src, dst in edges:
        if src in present and dst in present and src != dst:
            successors[src].add(dst)
            predecessors[dst].add(src)

    def key(node: str) -> tuple[int, str]:
        return (event_time_ms.get(node, 0), node)

    ready = [key(n) for n in nodes if not predecessors[n]]
    heapq.heapify(ready)
    waiting = {n for n in nodes if predecessors[n]}
    order: list[str] = []
    dropped: list[tuple[str, str]] = []
    while len(order) < len(nodes):
        if not ready:
            # A cycle: release the earliest waiting node, dropping the edges into it.
            node = min(waiting, key=key)
            dropped.extend(sorted((p, node) for p in predecessors[node]))
            for p in predecessors[node]:
                successors[p].discard(node)
            predecessors[node].clear()
            waiting.discard(node)
            heapq.heappush(ready, key(node))
        _, node = heapq.heappop(ready)
        order.append(node)
        for nxt in sorted(successors[node]):
            predecessors[nxt].discard(node)
            if not predecessors[nxt] and nxt in waiting:
                waiting.discard(nxt)
                heapq.heappush(ready, key(nxt))
    return Ordering(tuple(order), tuple(dropped))
