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
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.records import Layer
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
