"""System 1 seeds: vector + BM25 over the authorized rows, fused, with seed 002's fallback chain.

A graph that can be scanned (the retrieval package's `MemoryView`) goes through
`processors.retrieval.hybrid.hybrid_search`: its fusion, intents, fallback chain and bounds.
For any other `MemoryGraph` the same chain runs here, minus the scan: the intent sets the fusion
weights (`locate` weighs BM25 twice), an index that raises `IndexUnavailableError` is skipped and
named in `fallbacks`, and with no index at all the result is empty and `partial`.

Fusion is a convex combination of min-max normalized scores (`processors.retrieval.fusion.convex`):
unlike RRF it keeps the *contrast* between a clear winner and the rest, which the knapsack needs
(values, not only ranks, decide what fits in the budget).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer
from engram.processors.retrieval.dated import time_match
from engram.processors.retrieval.errors import IndexUnavailableError
from engram.processors.retrieval.fusion import Normalization, normalized
from engram.processors.retrieval.hybrid import BALANCED as HYBRID_BALANCED
from engram.processors.retrieval.hybrid import Intent as HybridIntent
from engram.processors.retrieval.hybrid import SearchableMemory, hybrid_search
from engram.processors.retrieval.newer import newer_first
from engram.processors.retrieval.types import Candidate, MemoryGraph
from engram.processors.router.decision import Intent
from engram.schemas.records import Layer


@runtime_checkable
class SearchableGraph(SearchableMemory, Protocol):
    """A MemoryGraph that can also be scanned: what the retrieval package's `hybrid_search` takes."""


@dataclass(slots=True)
class Retrieved:
    candidates: list[Candidate]
    fallbacks: list[str] = field(default_factory=list)
    partial: bool = False


def _remaining_ms(deadline: float, clock: Callable[[], float]) -> float:
    return max(0.0, (deadline - clock()) * 1000.0)


def vector_weight(intent: Intent) -> float:
    """The vector list's share in fusion: `locate` leans on exact keywords, `explore` on meaning."""
    if intent is Intent.LOCATE:
        return 0.25
    if intent is Intent.EXPLORE:
        return 0.75
    return 0.5


def contrast_fuse(vector: Sequence[Candidate], text: Sequence[Candidate], vector_weight: float) -> list[Candidate]:
    """w·minmax(vector) + (1 − w)·(bm25 / max bm25), a missing candidate scoring 0 in that list.

    Unlike a fusion that gives absent candidates the list's floor, a node the BM25 index did not
    match gets no BM25 credit: the clear keyword winner keeps its lead in *value*, which is what
    the knapsack trades against tokens. Ties keep first appearance (vector list first).
    """
    order: dict[str, int] = {}
    scores: dict[str, float] = {}
    for ranking, weight, norm in (
        (vector, vector_weight, normalized(vector, Normalization.MINMAX)),
        (text, 1.0 - vector_weight, _by_max(text)),
    ):
        for cand in ranking:
            order.setdefault(cand.node_id, len(order))
            scores[cand.node_id] = scores.get(cand.node_id, 0.0) + weight * norm[cand.node_id]
    ranked = sorted(scores, key=lambda n: (-scores[n], order[n]))
    return [Candidate(n, scores[n], "hybrid") for n in ranked]


def reranked_seeds(graph: MemoryGraph, ranking: Sequence[Candidate], query: str) -> list[Candidate]:
    """``ranking`` with System 1's last reranks, with the balanced preset's settings: turns that
    state a date up for a question that asks when or names a date (`processors.retrieval.dated`),
    then same-thing candidates at its top newest first (`processors.retrieval.newer`). For
    rankings made outside `hybrid_search` (a re-fusion here, an SLB hit's rescore)."""
    cfg = HYBRID_BALANCED
    ranking = time_match(graph, ranking, query, when_boost=cfg.when_boost, anchor_boost=cfg.anchor_boost)
    return newer_first(
        graph, ranking, query, depth=cfg.newer_depth, similarity=cfg.newer_similarity,
        author_property=cfg.author_property,
    )  # fmt: skip


def _degenerate(ranking: Sequence[Candidate]) -> bool:
    """A list whose scores are all equal (e.g. one BM25 match): min-max gives it no contrast."""
    return len({c.score for c in ranking}) < 2


def _by_max(ranking: Sequence[Candidate]) -> dict[str, float]:
    top = max((c.score for c in ranking), default=0.0)
    return {c.node_id: (max(0.0, c.score) / top if top > 0 else 0.0) for c in ranking}


def hybrid_seeds(
    graph: MemoryGraph,
    query: str,
    query_vector: npt.NDArray[np.float32] | None,
    viewer: Viewer,
    layers: Collection[Layer],
    intent: Intent,
    k: int,
    *,
    max_scan: int,
    walks_graph: bool = False,
    deadline: float,
    clock: Callable[[], float],
) -> Retrieved:
    """Fused candidates, best first (scores in [0, 1]), with the fallbacks taken.

    Graphs that can be scanned go through the retrieval package's `hybrid_search`: its ranking
    (fusion and reranks, measured on LoCoMo), fallback chain and bounds. Its session-context rerank
    (boosting the NEXT neighbours of hits) is switched off when the route walks the graph itself
    (`walks_graph`), so PPR does not count adjacency twice. When one list's scores are all equal
    its min-max normalization has no contrast, and the lists are re-fused with `contrast_fuse`.
    Any other `MemoryGraph` gets the same chain here, minus the scan. Without ``query_vector``
    (the embedder failed) only the lexical index is searched. Whichever fusion ranks them, the
    candidates get System 1's last reranks (`reranked_seeds`: dates, then the newer first).
    """
    w_vector = vector_weight(intent)
    if isinstance(graph, SearchableGraph):
        result = hybrid_search(
            graph, query, k, viewer, layers,
            query_vector=query_vector,
            config=replace(
                HYBRID_BALANCED, pool=k, max_nodes_visited=max_scan, timeout_ms=_remaining_ms(deadline, clock),
                context_hits=0 if walks_graph else HYBRID_BALANCED.context_hits,
            ),
            intent=HybridIntent(intent.value),
            clock=clock,
        )  # fmt: skip
        lists = result.lists
        if "vector" in lists and "bm25" in lists and (_degenerate(lists["vector"]) or _degenerate(lists["bm25"])):
            fused = reranked_seeds(graph, contrast_fuse(lists["vector"], lists["bm25"], w_vector), query)
        else:
            scaled = _by_max(result.candidates)
            fused = [Candidate(c.node_id, scaled[c.node_id], c.source) for c in result.candidates]
        return Retrieved(fused, list(result.fallbacks), result.partial)
    out = Retrieved([])
    found: dict[str, list[Candidate]] = {}
    searches: list[tuple[str, Callable[[], list[Candidate]]]] = [
        ("bm25", lambda: graph.text_search(query, k, viewer, layers))
    ]
    if query_vector is not None:
        vector = query_vector
        searches.insert(0, ("vector", lambda: graph.vector_search(vector, k, viewer, layers)))
    else:
        out.fallbacks.append("vector:no-embedder")
    for name, search in searches:
        try:
            found[name] = search()
        except IndexUnavailableError as exc:
            out.fallbacks.append(f"{name}:{exc.reason}")
    if not found:
        out.fallbacks.append("no index available")
        out.partial = True
        return out
    fused = contrast_fuse(
        found.get("vector", []),
        found.get("bm25", []),
        w_vector if len(found) == 2 else 1.0 if "vector" in found else 0.0,
    )
    out.candidates = reranked_seeds(graph, fused, query)
    return out
