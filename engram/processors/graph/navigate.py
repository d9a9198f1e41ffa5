"""v0.1's local queries (seed 004 §1): traversal, pattern, temporal and resolve."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.graph.results import NodeInfo, Nodes, Resolved, Step, Traversal
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import NODE_TYPE_NAMES, EdgeType, NodeType

DIRECTIONS = ("out", "in", "both")


@dataclass(frozen=True, slots=True)
class TraversalQuery:
    start: int
    edge_types: frozenset[EdgeType] = frozenset()
    direction: str = "out"
    max_depth: int = 3
    limit: int = 100


@dataclass(frozen=True, slots=True)
class PatternQuery:
    types: frozenset[NodeType] = frozenset()
    sessions: frozenset[str] = frozenset()
    min_confidence: float = 0.0
    max_confidence: float = 1.0
    start_ms: int | None = None
    end_ms: int | None = None
    limit: int = 100
    newest_first: bool = True


def node_info(sub: Subgraph, local: int) -> NodeInfo:
    row = int(sub.rows[local])
    store = sub.store
    code = int(store.session[row])
    return NodeInfo(
        store.ids[row],
        NODE_TYPE_NAMES[store.node_type[row]],
        round(float(store.confidence[row]), 6),
        int(store.time_ms[row]),
        store.session_names[code] if code >= 0 else None,
        store.texts[row],
    )


def _neighbours(sub: Subgraph, node: int, direction: str, allowed: frozenset[EdgeType]) -> list[int]:
    out: list[int] = []
    types = sub.edge_type
    if direction in ("out", "both"):
        lo, hi = sub.out_ptr[node], sub.out_ptr[node + 1]
        out.extend(int(v) for v, e in zip(sub.out_idx[lo:hi], sub.out_edge[lo:hi], strict=True)
                   if not allowed or EdgeType(int(types[e])) in allowed)  # fmt: skip
    if direction in ("in", "both"):
        lo, hi = sub.in_ptr[node], sub.in_ptr[node + 1]
        out.extend(int(v) for v, e in zip(sub.in_idx[lo:hi], sub.in_edge[lo:hi], strict=True)
                   if not allowed or EdgeType(int(types[e])) in allowed)  # fmt: skip
    return out


def traverse(sub: Subgraph, query: TraversalQuery) -> Traversal:
    """Breadth-first from ``start`` along the chosen edge types and direction, up to ``max_depth``
    hops; nodes in discovery order (by depth, then edge order)."""
    depth = {query.start: 0}
    queue = deque([query.start])
    steps: list[Step] = []
    while queue and len(steps) < query.limit:
        u = queue.popleft()
        if depth[u] >= query.max_depth:
            continue
        for w in _neighbours(sub, u, query.direction, query.edge_types):
            if w not in depth:
                depth[w] = depth[u] + 1
                queue.append(w)
                steps.append(Step(sub.node_id(w), NODE_TYPE_NAMES[sub.node_type[w]], depth[w]))
                if len(steps) >= query.limit:
                    break
    return Traversal(sub.node_id(query.start), steps)


def _pattern_mask(sub: Subgraph, query: PatternQuery) -> npt.NDArray[np.bool_]:
    mask = (sub.confidence >= query.min_confidence) & (sub.confidence <= query.max_confidence)
    if query.types:
        mask &= np.isin(sub.node_type, [int(t) for t in query.types])
    if query.sessions:
        codes = [sub.store.sessions[s] for s in query.sessions if s in sub.store.sessions]
        mask &= np.isin(sub.session, codes)
    if query.start_ms is not None:
        mask &= sub.time_ms >= query.start_ms
    if query.end_ms is not None:
        mask &= sub.time_ms < query.end_ms
    return mask


def pattern(sub: Subgraph, query: PatternQuery) -> Nodes:
    """Nodes by type, session, confidence range and time range, newest (or oldest) first."""
    chosen = np.flatnonzero(_pattern_mask(sub, query))
    times = sub.time_ms[chosen]
    order = np.lexsort((chosen, -times if query.newest_first else times))[: query.limit]
    return Nodes([node_info(sub, int(chosen[i])) for i in order], len(chosen))


def temporal(sub: Subgraph, start_ms: int, end_ms: int, types: frozenset[NodeType] = frozenset(),
             limit: int = 100) -> Nodes:  # fmt: skip
    """What entered memory in [start, end), in time order."""
    query = PatternQuery(types=types, start_ms=start_ms, end_ms=end_ms, limit=limit, newest_first=False)
    return pattern(sub, query)


def resolve(sub: Subgraph, node: int) -> Resolved:
    """The current version of a belief: follow SUPERSEDES edges backwards (new SUPERSEDES old)
    from ``node`` to the newest version that nothing supersedes; the chain, oldest first."""
    chain = [node]
    seen = {node}
    while True:
        lo, hi = sub.in_ptr[chain[-1]], sub.in_ptr[chain[-1] + 1]
        newer = [int(v) for v, e in zip(sub.in_idx[lo:hi], sub.in_edge[lo:hi], strict=True)
                 if sub.edge_type[e] == EdgeType.SUPERSEDES and int(v) not in seen]  # fmt: skip
        if not newer:
            break
        nxt = max(newer, key=lambda v: (int(sub.time_ms[v]), v))
        chain.append(nxt)
        seen.add(nxt)
    ids = [sub.node_id(v) for v in chain]
    return Resolved(ids[0], ids[-1], ids)
