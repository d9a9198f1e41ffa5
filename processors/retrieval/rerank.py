"""Reranks of the fused ranking: the author named in the query, and a session-context window.

A conversational answer often spans adjacent turns (a question and its reply). For each of the
top ``hits`` candidates, its neighbours over ``edge_types`` (NEXT edges between consecutive turns)
inherit ``boost`` times the hit's score unless they already score higher. Neighbours come from the
graph's ``neighbours``, so they are authorized by construction.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Final

from processors.retrieval.types import Candidate, MemoryGraph
from schemas.records import Layer

CONTEXT_SOURCE = "context"
_WORD: Final = re.compile(r"[a-z0-9]+")


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


def author_match(
    graph: MemoryGraph, ranking: Sequence[Candidate], query: str, *, boost: float, author_property: str
) -> list[Candidate]:
    """Multiply by ``1 + boost`` the score of nodes whose author (``properties[author_property]``,
    e.g. a turn's speaker) is named in the query: "what did Ann paint?" is mostly answered by
    what Ann said. A word of the author's name must appear as a query word (case-insensitive)."""
    words = set(_WORD.findall(query.lower()))
    out: list[tuple[Candidate, int]] = []
    for i, cand in enumerate(ranking):
        record = graph.node(cand.node_id)
        author = record.properties.get(author_property, "") if record is not None else ""
        named = any(len(w) > 1 and w in words for w in _WORD.findall(author.lower()))
        out.append((Candidate(cand.node_id, cand.score * (1.0 + boost), cand.source) if named else cand, i))
    out.sort(key=lambda pair: (-pair[0].score, pair[1]))
    return [cand for cand, _ in out]
