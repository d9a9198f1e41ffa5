"""Shortest paths (seed 004 §4.4), along edge direction, over the principal's subgraph.

- Bidirectional BFS: the smaller frontier advances one whole level at a time (set operations on
  the adjacency lists, so the inner loop runs in C); when the frontiers meet, the meeting node with
  the shortest total is taken and the path is rebuilt level by level. The depth limit (default 20)
  bounds the path length.
- Dijkstra: bidirectional, with edge weights as distances (parallel edges: the lightest), stopping
  once the two heaps' minima together reach the best path found (the standard criterion).
Both are written by hand: scipy's csgraph runs single-source to completion, which at 100K nodes
costs more than the early-stopping searches here (`engram bench graph` prints scipy's beside them:
``scipy_bfs_ms``, ``scipy_dijkstra_ms``).
"""

from __future__ import annotations

import heapq
from itertools import chain

from engram.processors.graph.results import Path
from engram.processors.graph.subgraph import Subgraph

MAX_DEPTH = 20


def _expand(frontier: set[int], adjacency: list[list[int]], seen: set[int]) -> set[int]:
    nxt = set(chain.from_iterable(map(adjacency.__getitem__, frontier)))
    nxt -= seen
    return nxt


def _walk_back(levels: list[set[int]], node: int, adjacency_back: list[list[int]]) -> list[int]:
    """From ``node`` on level k back to level 0: one predecessor per level (the lowest index)."""
    path = [node]
    for level in range(len(levels) - 2, -1, -1):
        node = min(u for u in adjacency_back[node] if u in levels[level])
        path.append(node)
    return path


def _level_of(levels: list[set[int]], node: int) -> int:
    return next(i for i, level in enumerate(levels) if node in level)


def bfs_path(sub: Subgraph, source: int, target: int, max_depth: int = MAX_DEPTH) -> Path:
    """The shortest unweighted directed path ``source`` → ``target`` (local indices)."""
    if source == target:
        return Path(True, [sub.node_id(source)], 0, 0.0)
    out_lists, in_lists = sub.out_lists, sub.in_lists
    fwd_levels, bwd_levels = [{source}], [{target}]
    fwd_seen, bwd_seen = {source}, {target}
    while len(fwd_levels) + len(bwd_levels) - 2 < max_depth:
        forward = len(fwd_levels[-1]) <= len(bwd_levels[-1])
        if forward:
            nxt = _expand(fwd_levels[-1], out_lists, fwd_seen)
            fwd_seen |= nxt
            fwd_levels.append(nxt)
            meet = nxt & bwd_seen
        else:
            nxt = _expand(bwd_levels[-1], in_lists, bwd_seen)
            bwd_seen |= nxt
            bwd_levels.append(nxt)
            meet = nxt & fwd_seen
        if not nxt:
            break
        if meet:
            other = bwd_levels if forward else fwd_levels
            node = min(meet, key=lambda v: (_level_of(other, v), v))
            head = _walk_back(fwd_levels[: _level_of(fwd_levels, node) + 1], node, in_lists)[::-1]
            tail = _walk_back(bwd_levels[: _level_of(bwd_levels, node) + 1], node, out_lists)
            nodes = head + tail[1:]
            return Path(True, [sub.node_id(v) for v in nodes], len(nodes) - 1, float(len(nodes) - 1))
    return Path(False, [], 0, 0.0)


def dijkstra_path(sub: Subgraph, source: int, target: int) -> Path:
    """The lightest directed path ``source`` → ``target``, bidirectional Dijkstra."""
    if source == target:
        return Path(True, [sub.node_id(source)], 0, 0.0)
    adjacency = ((sub.out_lists, sub.out_weights), (sub.in_lists, sub.in_weights))
    dist: tuple[dict[int, float], dict[int, float]] = ({source: 0.0}, {target: 0.0})
    parent: tuple[dict[int, int], dict[int, int]] = ({}, {})
    done: tuple[set[int], set[int]] = (set(), set())
    heaps: tuple[list[tuple[float, int]], list[tuple[float, int]]] = ([(0.0, source)], [(0.0, target)])
    best, meet = float("inf"), -1
    while heaps[0] and heaps[1] and heaps[0][0][0] + heaps[1][0][0] < best:
        side = 0 if heaps[0][0][0] <= heaps[1][0][0] else 1
        d, u = heapq.heappop(heaps[side])
        if u in done[side]:
            continue
        done[side].add(u)
        lists, weights = adjacency[side]
        mine, theirs = dist[side], dist[1 - side]
        for w, cost in zip(lists[u], weights[u], strict=True):
            nd = d + cost
            if nd < mine.get(w, float("inf")):
                mine[w] = nd
                parent[side][w] = u
                heapq.heappush(heaps[side], (nd, w))
            if w in theirs and nd + theirs[w] < best:
                best, meet = nd + theirs[w], w
    if meet < 0:
        return Path(False, [], 0, 0.0)
    head = [meet]
    while head[-1] != source:
        head.append(parent[0][head[-1]])
    tail = [meet]
    while tail[-1] != target:
        tail.append(parent[1][tail[-1]])
    nodes = head[::-1] + tail[1:]
    return Path(True, [sub.node_id(v) for v in nodes], len(nodes) - 1, best)
