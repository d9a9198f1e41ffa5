"""Value of each pool node: α·relevance + β·PPR·decay (seed 001, Algorithm 1 line 7).

PPR runs from the seeds (personalization = their relevance) over the pool's subgraph and is scaled
to [0, 1] by its maximum. Decay is S(t) at the request's event time with C(n) = recorded accesses
(`access_count` property) + degree inside the pool. A node's age counts from `last_access_ms` when
the node records one, else from its event time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from processors.compiler.config import CompilerConfig
from processors.compiler.decay import strength
from processors.compiler.expand import GraphEdge
from processors.compiler.items import Scored, scored_node
from processors.compiler.ppr import ppr_by_id
from processors.retrieval.types import NodeRecord


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
    inside = [
        (e.src, e.dst, e.weight * config.edge_weights.get(e.edge_type, config.default_edge_weight))
        for e in edges
        if e.src in present and e.dst in present
    ]
    ppr = ppr_by_id(ids, inside, seeds, config.ppr) if config.beta > 0 else dict.fromkeys(ids, 0.0)
    top = max(ppr.values(), default=0.0)
    degree: Counter[str] = Counter()
    for src, dst, _ in inside:
        degree[src] += 1
        degree[dst] += 1
    pinned_kinds = frozenset(config.pinned_kinds)
    out: list[Scored] = []
    for record in records:
        rel = relevance.get(record.node_id, 0.0)
        p = ppr[record.node_id] / top if top > 0 else 0.0
        count = _int_property(record, "access_count", 0) + degree[record.node_id]
        age = request_time_ms - _int_property(record, "last_access_ms", record.event_time_ms)
        d = strength(record.kind, age, count, config.decay)
        value = config.alpha * rel + config.beta * p * d
        out.append(scored_node(record, rel, p, d, value, record.kind in pinned_kinds))
    return out
