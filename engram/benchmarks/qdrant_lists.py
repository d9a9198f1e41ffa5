"""``--qdrant-lists`` and ``--hot-set`` of ``bench locomo`` and ``bench longmemeval``: System 1
reading memory from Qdrant instead of the view (issue 50: "recall must not move").

A conversation's (a question's haystack's) nodes go into an embedded Qdrant
(`sinks.qdrant.hybrid_index.HybridIndex`, qdrant-edge in a temporary folder): the vector the view
matches each node by, its BM25 weights as a sparse vector with Qdrant's IDF modifier, and its
record and edges in the payload. Each question then takes its ``vector`` and ``bm25`` lists from
Qdrant, under the same ReBAC filters, and the view's reranks order them (`hybrid.rank_lists`):
- ``--qdrant-lists``: the reranks read the whole view;
- ``--hot-set TURNS``: the view holds only the last TURNS turns, and the reranks read the rest from
  Qdrant (`processors.retrieval.tiered.TieredMemory`), counting what they read there.
The recall each prints beside the view's own says whether System 1 can read memory that is no
longer in the worker's RAM without losing quality.

``--view-hot-turns TURNS`` measures the worker's own view instead (`capped_view`): each user's live
turns past TURNS leave its RAM for its store (`storage.ViewConfig.hot_turns`,
``ENGRAM_VIEW_HOT_TURNS``), and its searches take them from there; `HotSetTally` adds up what it
kept in RAM and read back.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Collection, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import HybridConfig, rank_lists
from engram.processors.retrieval.tiered import TieredMemory
from engram.processors.retrieval.types import Candidate, NodeGraph
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.changes import change_as
from engram.schemas.records import EdgeUpserted, Layer, MemoryEvent, NodeUpserted
from engram.sinks.qdrant.hybrid_index import HybridIndex, points_from_view

STORE = "qdrant-edge (embedded): dense 'context' vectors + sparse BM25 'terms' with the IDF modifier"


def add_arguments(parser: argparse.ArgumentParser, unit: str) -> None:
    """The two flags; ``unit`` names what the hot set is the last turns of."""
    parser.add_argument(
        "--qdrant-lists", action="store_true",
        help="also rank with System 1's lists read from an embedded Qdrant (benchmarks/qdrant_lists.py)",
    )  # fmt: skip
    parser.add_argument(
        "--hot-set", type=int, default=None, metavar="TURNS",
        help=f"also rank with the view holding only each {unit}'s last TURNS turns, the rest read from Qdrant",
    )  # fmt: skip
    parser.add_argument(
        "--view-hot-turns", type=int, default=None, metavar="TURNS",
        help="also rank with the worker's own view capped at TURNS live turns in RAM, the rest in its store "
        "(ENGRAM_VIEW_HOT_TURNS), beside the uncapped run",
    )  # fmt: skip


@contextmanager
def capped_view(hot_turns: int, embedder: Embedder | None = None) -> Iterator[MemoryView]:
    """A view as a worker keeps it under ``ENGRAM_VIEW_HOT_TURNS``, its store (qdrant-edge) in a
    temporary folder."""
    with tempfile.TemporaryDirectory(prefix="engram-view-hot-") as folder:
        store = HybridIndex.for_view(Path(folder) / "view")
        try:
            yield MemoryView(ViewConfig(hot_turns=hot_turns), embedder=embedder, store=store)
        finally:
            store.close()


@dataclass(slots=True)
class HotSetTally:
    """What capped views (`capped_view`) kept in RAM and read back from their stores, and their
    searches' times."""

    hot_turns: int
    held: int = 0
    total: int = 0
    reads: int = 0
    fetches: int = 0
    questions: int = 0
    latencies_ms: list[float] = field(default_factory=list)

    def add(self, view: MemoryView, questions: int) -> None:
        """A view done with, after ``questions`` questions."""
        self.held += view.held_bytes(dormant=False)[0]
        self.total += len(view)
        self.reads += view.store_reads[0]
        self.fetches += view.store_reads[1]
        self.questions += questions

    def fields(self) -> dict[str, object]:
        per = max(self.questions, 1)
        return {
            "hot_turns": self.hot_turns,
            "ram_share": round(self.held / self.total, 4) if self.total else 0.0,
            "cold_reads_per_question": round(self.reads / per, 2),
            "cold_fetches_per_question": round(self.fetches / per, 2),
            "search_ms_p50": round(float(np.percentile(self.latencies_ms, 50)), 3) if self.latencies_ms else 0.0,
        }


@dataclass(slots=True)
class StoreRanker:
    """Ranks as the hybrid search does, the two lists taken from ``index``; the reranks read
    ``view``, or, when ``tiered``, ``view`` first and ``index`` for what it does not hold. Keeps
    each ranking's time and, when tiered, what it read from the cold tier."""

    view: MemoryView
    index: HybridIndex
    avgdl: float
    tiered: bool
    latencies_ms: list[float] = field(default_factory=list)
    cold_reads: list[int] = field(default_factory=list)
    fetches: list[int] = field(default_factory=list)

    def ranking(
        self, query: str, vector: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        config: HybridConfig,
    ) -> list[Candidate]:  # fmt: skip
        started = time.perf_counter()
        lists = self.index.lists(query, vector, k, viewer, layers, config.kinds)
        memory: NodeGraph = self.view
        if self.tiered:
            memory = tiered = TieredMemory(self.view, self.index)
            tiered.prime([c.node_id for found in lists.values() for c in found])
        ranking, _ = rank_lists(memory, query, lists, layers, config, config.max_nodes_visited, viewer)
        self.latencies_ms.append((time.perf_counter() - started) * 1000.0)
        if self.tiered:
            self.cold_reads.append(tiered.cold_reads)
            self.fetches.append(tiered.fetches)
        return ranking


@contextmanager
def in_store(
    events: Sequence[MemoryEvent], turns: Sequence[str], dim: int, hot_turns: int | None
) -> Iterator[StoreRanker]:
    """``turns`` (of the memory ``events`` make) in Qdrant, and a view of the whole memory, or of
    only the last ``hot_turns`` turns when given."""
    whole = MemoryView(ViewConfig())
    whole.apply(events)
    points, sparse = points_from_view(whole, turns)
    view = whole
    if hot_turns is not None:
        view = MemoryView(ViewConfig())
        view.apply(hot_events(events, frozenset(turns[-hot_turns:]) if hot_turns > 0 else frozenset()))
    with tempfile.TemporaryDirectory(prefix="engram-qdrant-lists-") as folder:
        index = HybridIndex(Path(folder) / "nodes", dim)
        try:
            index.write(points)
            yield StoreRanker(view, index, sparse.avgdl, tiered=hot_turns is not None)
        finally:
            index.close()


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


def upserted(events: Sequence[MemoryEvent]) -> list[str]:
    """Node ids in the order their first upsert came."""
    return list(dict.fromkeys(node["node_id"] for e in events if (node := change_as(e, NodeUpserted)) is not None))


def store_fields(rankers: Sequence[StoreRanker], held: int, total: int) -> dict[str, object]:
    """The rankings' p50, the mean BM25 length, and for a hot set its share and its cold reads."""
    latencies = [ms for r in rankers for ms in r.latencies_ms]
    out: dict[str, object] = {
        "search_ms_p50": round(float(np.percentile(latencies, 50)), 3) if latencies else 0.0,
        "sparse_avgdl_mean": round(float(np.mean([r.avgdl for r in rankers])), 2) if rankers else 0.0,
        "store": STORE,
    }
    if any(r.tiered for r in rankers):
        reads = [n for r in rankers for n in r.cold_reads]
        fetches = [n for r in rankers for n in r.fetches]
        out["hot_share"] = round(held / total, 4) if total else 0.0
        out["cold_reads_per_question"] = round(float(np.mean(reads)), 2) if reads else 0.0
        out["cold_fetches_per_question"] = round(float(np.mean(fetches)), 2) if fetches else 0.0
    return out
