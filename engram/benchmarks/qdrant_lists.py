"""``--qdrant-lists`` of ``bench locomo`` and ``bench longmemeval``: System 1's lists read from
Qdrant instead of the view.

Each conversation's (each question's haystack's) nodes go into an embedded Qdrant
(`sinks.qdrant.hybrid_index.HybridIndex`, qdrant-edge in a temporary folder): the vector the
view matches each node by and its BM25 weights
as a sparse vector with Qdrant's IDF modifier. Each question then takes its ``vector`` and ``bm25``
lists from Qdrant, under the same ReBAC filters, and the view's reranks order them
(`hybrid.rank_lists`), exactly as they order the view's own lists. The recall it prints against
the view's says whether System 1 can read memory that is no longer in the worker's RAM without
losing quality (issue 50: "recall must not move").
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engram.benchmarks.locomo import LAYERS, Conversation
from engram.benchmarks.retrieval_metrics import recall_at
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import HybridConfig, rank_lists
from engram.processors.retrieval.tiered import TieredMemory
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.changes import change_as
from engram.schemas.records import EdgeUpserted, Layer, MemoryEvent, NodeUpserted
from engram.sinks.qdrant.hybrid_index import HybridIndex, points_from_view


@contextmanager
def qdrant_lists(view: MemoryView, node_ids: Sequence[str], dim: int) -> Iterator[QdrantRanker]:
    """A `QdrantRanker` over these nodes of ``view``, in an index in a temporary folder."""
    with tempfile.TemporaryDirectory(prefix="engram-qdrant-lists-") as folder:
        index = HybridIndex(Path(folder) / "nodes", dim)
        try:
            points, sparse = points_from_view(view, node_ids)
            index.upsert(points)
            yield QdrantRanker(view, index, sparse.avgdl)
        finally:
            index.close()


@dataclass(slots=True)
class QdrantRanker:
    """Ranks as the hybrid search does, with the two lists taken from ``index``."""

    view: MemoryView
    index: HybridIndex
    avgdl: float
    latencies_ms: list[float] = field(default_factory=list)

    def ranking(
        self, query: str, vector: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        config: HybridConfig,
    ) -> list[Candidate]:  # fmt: skip
        started = time.perf_counter()
        lists = self.index.lists(query, vector, k, viewer, layers, config.kinds)
        self.latencies_ms.append((time.perf_counter() - started) * 1000.0)
        ranking, _ = rank_lists(self.view, query, lists, layers, config, config.max_nodes_visited, viewer)
        return ranking


def locomo_recall(conversations: Sequence[Conversation], embedder: Embedder, config: HybridConfig) -> dict[str, object]:
    """recall@10 overall and by category with the lists from Qdrant, and the two searches' p50.
    Each conversation's BM25 weights are normalized against its own mean turn length."""
    lengths: list[float] = []
    by_category: dict[int, list[float]] = {}
    everything: list[float] = []
    latencies: list[float] = []
    for conv in conversations:
        view = MemoryView(ViewConfig())
        view.apply(conv.events)
        vectors = embedder.embed([q.text for q in conv.questions])
        with qdrant_lists(view, sorted(conv.dia_ids), int(vectors.shape[1])) as ranker:
            for q, vector in zip(conv.questions, vectors, strict=True):
                ranking = ranker.ranking(q.text, vector, config.pool, Viewer(conv.name), LAYERS, config)
                ranked = [conv.dia_ids[c.node_id] for c in ranking if c.node_id in conv.dia_ids]
                value = recall_at(ranked, set(q.evidence), 10)
                everything.append(value)
                by_category.setdefault(q.category, []).append(value)
            lengths.append(ranker.avgdl)
            latencies.extend(ranker.latencies_ms)
    return {
        "recall@10": round(float(np.mean(everything)), 4) if everything else 0.0,
        "recall@10_by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(by_category.items())},
        "search_ms_p50": round(float(np.percentile(latencies, 50)), 3) if latencies else 0.0,
        "sparse_avgdl_mean": round(float(np.mean(lengths)), 2) if lengths else 0.0,
        "store": "qdrant-edge (embedded): dense 'context' vectors + sparse BM25 'terms' with the IDF modifier",
    }


def hot_events(events: Sequence[MemoryEvent], hot: frozenset[str]) -> list[MemoryEvent]:
    """What a worker holding only ``hot`` would have applied: every event but the upserts of the
    other nodes and the edges between two of them (an edge to a cold node is kept: the walk
    crosses it into the store)."""
    out: list[MemoryEvent] = []
    for event in events:
        node = change_as(event, NodeUpserted)
        edge = change_as(event, EdgeUpserted)
        if node is not None and node["node_id"] not in hot:
            continue
        if edge is not None and edge["src"] not in hot and edge["dst"] not in hot:
            continue
        out.append(event)
    return out


@dataclass(slots=True)
class HotSetRanker:
    """Ranks with the lists from ``index`` and the reranks reading a hot view first, the rest from
    Qdrant (`TieredMemory`); keeps what each question read from the cold tier and how long it took."""

    view: MemoryView
    index: HybridIndex
    cold_reads: list[int] = field(default_factory=list)
    fetches: list[int] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)

    def ranking(
        self, query: str, vector: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        config: HybridConfig,
    ) -> list[Candidate]:  # fmt: skip
        started = time.perf_counter()
        lists = self.index.lists(query, vector, k, viewer, layers, config.kinds)
        memory = TieredMemory(self.view, self.index)
        memory.prime([c.node_id for found in lists.values() for c in found])
        ranking, _ = rank_lists(memory, query, lists, layers, config, config.max_nodes_visited, viewer)
        self.latencies_ms.append((time.perf_counter() - started) * 1000.0)
        self.cold_reads.append(memory.cold_reads)
        self.fetches.append(memory.fetches)
        return ranking


@contextmanager
def hot_set(events: Sequence[MemoryEvent], turns: Sequence[str], hot_turns: int, dim: int) -> Iterator[HotSetRanker]:
    """Every one of ``turns`` in Qdrant, and a view holding only the last ``hot_turns`` of them."""
    whole = MemoryView(ViewConfig())
    whole.apply(events)
    points, _ = points_from_view(whole, turns)
    del whole
    view = MemoryView(ViewConfig())
    view.apply(hot_events(events, frozenset(turns[-hot_turns:]) if hot_turns > 0 else frozenset()))
    with tempfile.TemporaryDirectory(prefix="engram-hot-set-") as folder:
        index = HybridIndex(Path(folder) / "nodes", dim)
        try:
            index.upsert(points)
            yield HotSetRanker(view, index)
        finally:
            index.close()


def hot_set_fields(rankers: Sequence[HotSetRanker], held: int, total: int) -> dict[str, object]:
    reads = [n for r in rankers for n in r.cold_reads]
    fetches = [n for r in rankers for n in r.fetches]
    latencies = [ms for r in rankers for ms in r.latencies_ms]
    return {
        "hot_share": round(held / total, 4) if total else 0.0,
        "cold_reads_per_question": round(float(np.mean(reads)), 2) if reads else 0.0,
        "cold_fetches_per_question": round(float(np.mean(fetches)), 2) if fetches else 0.0,
        "search_ms_p50": round(float(np.percentile(latencies, 50)), 3) if latencies else 0.0,
    }


def hot_set_recall(
    conversations: Sequence[Conversation], embedder: Embedder, config: HybridConfig, hot_turns: int
) -> dict[str, object]:
    """recall@10 when the worker's view holds only each conversation's last ``hot_turns`` turns and
    everything else is read from Qdrant (`processors.retrieval.tiered.TieredMemory`)."""
    by_category: dict[int, list[float]] = {}
    everything: list[float] = []
    rankers: list[HotSetRanker] = []
    held = total = 0
    for conv in conversations:
        turns = [n for n in dict.fromkeys(_upserted(conv.events)) if n in conv.dia_ids]
        held, total = held + min(len(turns), max(hot_turns, 0)), total + len(turns)
        vectors = embedder.embed([q.text for q in conv.questions])
        with hot_set(conv.events, turns, hot_turns, int(vectors.shape[1])) as ranker:
            for q, vector in zip(conv.questions, vectors, strict=True):
                ranking = ranker.ranking(q.text, vector, config.pool, Viewer(conv.name), LAYERS, config)
                ranked = [conv.dia_ids[c.node_id] for c in ranking if c.node_id in conv.dia_ids]
                value = recall_at(ranked, set(q.evidence), 10)
                everything.append(value)
                by_category.setdefault(q.category, []).append(value)
            rankers.append(ranker)
    return {
        "hot_turns_per_conversation": hot_turns,
        "recall@10": round(float(np.mean(everything)), 4) if everything else 0.0,
        "recall@10_by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(by_category.items())},
        **hot_set_fields(rankers, held, total),
    }


def _upserted(events: Sequence[MemoryEvent]) -> list[str]:
    return [node["node_id"] for event in events if (node := change_as(event, NodeUpserted)) is not None]
