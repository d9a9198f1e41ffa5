"""Value of each pool node: α·relevance + β·PPR·decay (seed 001, Algorithm 1 line 7).

PPR runs from the seeds (personalization = their relevance) over the pool's subgraph and is scaled
to [0, 1] by its maximum. Decay is S(t) at the request's event time with C(n) = recorded accesses
(`access_count` property) + degree inside the pool. A node's age counts from its last access
(`last_access_ms`, set from the log: processors/retrieval/access.py) when that is later than its
event time, else from its event time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import numpy as np

from engram.processors.compiler.config import CompilerConfig
from engram.processors.compiler.decay import strengths
from engram.processors.compiler.expand import GraphEdge
from engram.processors.compiler.items import Scored, scored_node
from engram.processors.compiler.ppr import ppr_scores
from engram.processors.retrieval.access import ACCESS_COUNT, LAST_ACCESS_MS
from engram.processors.retrieval.types import NodeRecord


def _int_property(record: NodeRecord, name: str, default: int) -> int:
    raw = record.properties.get(name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        return default


def score_pool(
    records: Sequence[NodeRecord],
    relevance: Mapping[str, float],
    edges: Sequence[GraphEdge],
    seeds: Mapping[str, float],
    request_time_ms: int,
    config: CompilerConfig,
) -> list[Scored]:
    ids = [r.node_id for r in records]
    present = set(ids)
    weights, default_weight = config.edge_weights, config.default_edge_weight
    inside = [
        (e.src, e.dst, e.weight * weights.get(e.edge_type, default_weight))
        for e in edges
        if e.src in present and e.dst in present
    ]
    ppr = ppr_scores(ids, inside, seeds, config.ppr) if config.beta > 0 else np.zeros(len(ids))
    top = float(ppr.max()) if len(ids) else 0.0
    scaled = (ppr / top if top > 0 else np.zeros(len(ids))).tolist()
    degree: Counter[str] = Counter()
    for src, dst, _ in inside:
        degree[src] += 1
        degree[dst] += 1
    pinned_kinds = frozenset(config.pinned_kinds)
    decay = strengths(
        [r.kind for r in records],
        [request_time_ms - max(r.event_time_ms, _int_property(r, LAST_ACCESS_MS, r.event_time_ms)) for r in records],
        [_int_property(r, ACCESS_COUNT, 0) + degree[r.node_id] for r in records],
        config.decay,
    )
    alpha, beta = config.alpha, config.beta
    out: list[Scored] = []
    for record, p, d in zip(records, scaled, decay, strict=True):
        rel = relevance.get(record.node_id, 0.0)
        out.append(scored_node(record, rel, p, d, alpha * rel + beta * p * d, record.kind in pinned_kinds))
    return out
