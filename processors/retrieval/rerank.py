"""Graph-aware rerank: a session-context window over the fused ranking.

A conversational answer often spans adjacent turns (a question and its reply). For each of the
top ``hits`` candidates, its neighbours over ``edge_types`` (NEXT edges between consecutive turns)
inherit ``boost`` times the hit's score unless they already score higher. Neighbours come from the
graph's ``neighbours``, so they are authorized by construction.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from processors.retrieval.types import Candidate, MemoryGraph
from schemas.records import Layer

CONTEXT_SOURCE = "context"


def session_context(
    graph: MemoryGraph,
    ranking: Sequence[Candidate],
    layers: Collection[Layer],
    *,
    hits: int,
    boost: float,
    edge_types: Collection[str],
    max_visits: int,
) -> tuple[list[Candidate], int]:
    """Returns the reranked list and how many neighbour lookups were made (bounded by max_visits)."""
    best: dict[str, Candidate] = {c.node_id: c for c in ranking}
    order = {c.node_id: i for i, c in enumerate(ranking)}
    visits = 0
    for hit in ranking[:hits]:
        for nb in graph.neighbours(hit.node_id, layers, edge_types):
            if visits >= max_visits:
                break
            visits += 1
            score = boost * hit.score
            current = best.get(nb.node_id)
            if current is None or current.score < score:
                best[nb.node_id] = Candidate(nb.node_id, score, current.source if current else CONTEXT_SOURCE)
                order.setdefault(nb.node_id, len(order))
    ranked = sorted(best.values(), key=lambda c: (-c.score, order[c.node_id]))
    return ranked, visits
