"""System 1 retrieval: vector + BM25, fused, with seed 002's fallback chain and safety bounds.

Chain: the vector index and BM25 are accelerators. If the vector side is unavailable (no embedder,
an embedder error, no vectors) the BM25 list stands alone; if BM25 is unavailable too, an
index-free scan over the authorized nodes runs (bounded by ``max_nodes_visited`` and the timeout).
Every step not taken is recorded in ``fallbacks`` so the compiler can report it. A stage that
finds the deadline passed stops the search and returns what it has, flagged ``partial``.

Intents (seed 002): ANSWER fuses with the configured weights; LOCATE leans on BM25 and EXPLORE on
vectors; TIME_BOXED never escalates to a scan.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from processors.embedding.base import Embedder
from processors.retrieval.errors import IndexUnavailableError
from processors.retrieval.fusion import Normalization, convex, rrf
from processors.retrieval.rerank import session_context
from processors.retrieval.scan import scan_search
from processors.retrieval.types import Candidate, MemoryGraph, NodeRecord
from schemas.records import Layer


class Fusion(StrEnum):
    RRF = "rrf"
    MINMAX = "minmax"
    ZSCORE = "zscore"


class Intent(StrEnum):
    ANSWER = "answer"
    LOCATE = "locate"
    EXPLORE = "explore"
    TIME_BOXED = "time-boxed"


@dataclass(frozen=True, slots=True)
class HybridConfig:
    """``vector_weight``: share of the vector list in convex fusion (BM25 gets the rest).
    ``pool``: candidates taken from each retriever. ``context_hits``/``context_boost``: the
    session-context rerank (0 hits = off). ``timeout_ms`` and ``max_nodes_visited`` bound a search."""

    fusion: Fusion = Fusion.MINMAX
    vector_weight: float = 0.5
    rrf_k: int = 60
    pool: int = 50
    context_hits: int = 0
    context_boost: float = 0.0
    context_edge_types: tuple[str, ...] = ("NEXT",)
    max_nodes_visited: int = 5000
    timeout_ms: float = 50.0
    allow_scan: bool = True


BALANCED: Final = HybridConfig()
FAST: Final = replace(BALANCED, pool=20, context_hits=0, timeout_ms=10.0, max_nodes_visited=1000)
THOROUGH: Final = replace(BALANCED, pool=100, timeout_ms=200.0, max_nodes_visited=20000)
PRESETS: Final[dict[str, HybridConfig]] = {"fast": FAST, "balanced": BALANCED, "thorough": THOROUGH}


class SearchableMemory(MemoryGraph, Protocol):
    def authorized_nodes(self, user_id: str, layers: Collection[Layer]) -> Iterator[NodeRecord]: ...


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """``lists`` holds each retriever's own ranking (for explanations and baselines)."""

    candidates: list[Candidate]
    fallbacks: tuple[str, ...]
    partial: bool
    visited: int
    timings_ms: dict[str, float] = field(default_factory=dict)
    lists: dict[str, list[Candidate]] = field(default_factory=dict)


@dataclass(slots=True)
class _Run:
    clock: Callable[[], float]
    deadline: float
    fallbacks: list[str] = field(default_factory=list)
    timings_ms: dict[str, float] = field(default_factory=dict)
    partial: bool = False

    def expired(self, stage: str) -> bool:
        if self.clock() > self.deadline:
            self.partial = True
            self.fallbacks.append(f"timeout:before-{stage}")
        return self.partial

    def timed(self, stage: str, started: float) -> None:
        self.timings_ms[stage] = (self.clock() - started) * 1000.0


def _vector_list(
    memory: MemoryGraph, query: str, query_vector: npt.NDArray[np.float32] | None, embedder: Embedder | None,
    request: tuple[int, str, Collection[Layer]], run: _Run,
) -> list[Candidate] | None:  # fmt: skip
    pool, user_id, layers = request
    if query_vector is None:
        if embedder is None:
            run.fallbacks.append("vector:no-embedder")
            return None
        try:
            query_vector = embedder.embed([query])[0]
        # Any embedder failure degrades to BM25 rather than failing the request (seed 002).
        except Exception as exc:
            run.fallbacks.append(f"vector:embedder-error:{type(exc).__name__}")
            return None
    try:
        return memory.vector_search(query_vector, pool, user_id, layers)
    except IndexUnavailableError as exc:
        run.fallbacks.append(f"vector:{exc.reason}")
        return None


def fuse(vector: Sequence[Candidate], text: Sequence[Candidate], config: HybridConfig) -> list[Candidate]:
    """Fuse the vector and BM25 rankings as ``config`` says."""
    weights = (config.vector_weight, 1.0 - config.vector_weight)
    if config.fusion is Fusion.RRF:
        return rrf([vector, text], weights=[2 * w for w in weights], k=config.rrf_k)
    how = Normalization.MINMAX if config.fusion is Fusion.MINMAX else Normalization.ZSCORE
    return convex([vector, text], weights, how)


def _intent_config(config: HybridConfig, intent: Intent) -> HybridConfig:
    if intent is Intent.LOCATE:
        return replace(config, vector_weight=min(config.vector_weight, 0.25))
    if intent is Intent.EXPLORE:
        return replace(config, vector_weight=max(config.vector_weight, 0.75))
    return config


def hybrid_search(
    memory: SearchableMemory,
    query: str,
    k: int,
    user_id: str,
    layers: Collection[Layer],
    *,
    embedder: Embedder | None = None,
    query_vector: npt.NDArray[np.float32] | None = None,
    config: HybridConfig = BALANCED,
    intent: Intent = Intent.ANSWER,
    clock: Callable[[], float] = time.perf_counter,
) -> RetrievalResult:
    """The top ``k`` candidates for ``query`` among the nodes visible to (user_id, layers)."""
    config = _intent_config(config, intent)
    started = clock()
    run = _Run(clock, started + config.timeout_ms / 1000.0)
    pool = max(k, min(config.pool, config.max_nodes_visited))
    lists: dict[str, list[Candidate]] = {}
    vector = _vector_list(memory, query, query_vector, embedder, (pool, user_id, layers), run)
    if vector is not None:
        lists["vector"] = vector
    run.timed("vector", started)
    text: list[Candidate] | None = None
    if not run.expired("bm25"):
        stage = clock()
        try:
            text = lists["bm25"] = memory.text_search(query, pool, user_id, layers)
        except IndexUnavailableError as exc:
            run.fallbacks.append(f"bm25:{exc.reason}")
        run.timed("bm25", stage)
    visited = sum(len(v) for v in lists.values())
    if vector is None and text is None and not run.partial:
        ranking, visited = _scan(memory, query, k, user_id, layers, config, intent, run)
        lists["scan"] = ranking
    elif vector is not None and text is not None:
        ranking = fuse(vector, text, config)
    else:
        ranking = list(vector if vector is not None else text or [])
    if config.context_hits > 0 and ranking and not run.expired("context"):
        stage = clock()
        ranking, visits = session_context(
            memory, ranking, layers, hits=config.context_hits, boost=config.context_boost,
            edge_types=config.context_edge_types, max_visits=max(0, config.max_nodes_visited - visited),
        )  # fmt: skip
        visited += visits
        run.timed("context", stage)
    run.timed("total", started)
    return RetrievalResult(ranking[:k], tuple(run.fallbacks), run.partial, visited, run.timings_ms, lists)


def _scan(
    memory: SearchableMemory, query: str, k: int, user_id: str, layers: Collection[Layer],
    config: HybridConfig, intent: Intent, run: _Run,
) -> tuple[list[Candidate], int]:  # fmt: skip
    if not config.allow_scan or intent is Intent.TIME_BOXED:
        run.fallbacks.append("scan:not-allowed")
        return [], 0
    stage = run.clock()
    result = scan_search(
        memory, query, k, user_id, layers, max_nodes=config.max_nodes_visited, deadline=run.deadline, clock=run.clock
    )
    run.fallbacks.append("scan")
    if not result.complete:
        run.partial = True
        run.fallbacks.append(f"scan:stopped-after-{result.visited}-nodes")
    run.timed("scan", stage)
    return result.candidates, result.visited
