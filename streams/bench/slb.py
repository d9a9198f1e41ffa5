"""SLB on LoCoMo: hit rate, hit-path speedup and recall loss of the Semantic Lookaside Buffer.

Each LoCoMo conversation (a folder of ``<n>.json`` files) becomes one user's memory (a turn per
node, NEXT edges within a session) in an in-process ``MemoryView``; its QA questions of categories
1-4, in file order, are one session's query stream. For every question:

- without the SLB: the global hybrid search (vector + BM25, fused) → top 10;
- with the SLB: a lookup over K centroids; a hit re-scores the cached neighbourhood against the
  new query (cosine, O(K·d + M·d)); a miss runs the global search and inserts its top M.

``hit_speedup`` = median miss-path latency / median hit-path latency, same run (after an
unscored warm-up replay). Query embedding is
needed by both paths and is reported apart (``embed_ms_per_query``). ``recall_loss`` = recall@10
without the SLB − recall@10 with it. ``sweep`` replays the same stream for other τ_hit values.
"""

from __future__ import annotations

import argparse
import json
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from processors.embedding.base import Embedder
from processors.embedding.static import StaticEmbedder
from processors.retrieval.hybrid import BALANCED as HYBRID
from processors.retrieval.hybrid import hybrid_search
from processors.retrieval.metrics import canonical_dia_id, normalize_evidence, recall_at
from processors.retrieval.types import Candidate
from processors.retrieval.view import MemoryView
from processors.slb import LookasideBuffer, SlbConfig, TermMatrix, rescore
from schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from schemas.records import EDGE_UPSERTED, NODE_UPSERTED, EventRef, Layer, MemoryEvent

LAYERS: Final[tuple[Layer, ...]] = ("USER",)
CATEGORIES: Final = (1, 2, 3, 4)
GOALS: Final = {"hit_rate": 0.85, "hit_speedup": 10.0, "recall_loss": 0.01}
SWEEP_TAUS: Final = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.6, 0.5)
K: Final = 10


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation JSON files")
    parser.add_argument("--capacity", type=int, default=32, help="K centroids (16-64)")
    parser.add_argument("--tau", type=float, default=0.85, help="hit threshold τ_hit (cosine)")
    parser.add_argument("--neighbourhood", type=int, default=128, help="M node ids cached per centroid")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats per path (median taken)")


@dataclass(frozen=True, slots=True)
class Conversation:
    user: str
    events: list[MemoryEvent]
    texts: dict[str, str]  # node id -> text
    dia: dict[str, str]  # node id -> canonical dia_id
    questions: list[tuple[str, frozenset[str]]]


def load_conversation(path: Path) -> Conversation:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    user = f"locomo-{path.stem}"
    events: list[MemoryEvent] = []
    texts: dict[str, str] = {}
    dia: dict[str, str] = {}
    sessions = sorted(int(k.split("_")[1]) for k in data if k.startswith("session_") and k.count("_") == 1)
    for num in sessions:
        turns = data.get(f"session_{num}")
        if not isinstance(turns, list):
            continue
        previous: str | None = None
        for index, turn in enumerate(turns):
            dia_id = canonical_dia_id(str(turn.get("dia_id", "")))
            if dia_id is None:
                continue
            node_id = stable_id("locomo", path.stem, dia_id)
            text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
            texts[node_id], dia[node_id] = text, dia_id
            ref: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": len(texts)}]
            node = node_upserted(node_id, "turn", "USER", num * 10_000 + index, text=text, user_id=user)
            events.append(memory_event(user, num * 10_000 + index, ref, NODE_UPSERTED, node))
            if previous is not None:
                events.append(
                    memory_event(user, 0, ref, EDGE_UPSERTED, edge_upserted("NEXT", previous, node_id, "USER"))
                )
            previous = node_id
    existing = set(dia.values())
    questions = []
    for item in data.get("qa", []):
        gold = normalize_evidence(item.get("evidence", []), existing)
        if item.get("category") in CATEGORIES and gold:
            questions.append((str(item["question"]), frozenset(gold)))
    return Conversation(user, events, texts, dia, questions)


class MatrixVectors:
    """Node vectors for the hit path's re-scoring (the SLB's `NodeVectors` protocol)."""

    def __init__(self, ids: Sequence[str], matrix: npt.NDArray[np.float32]) -> None:
        self.row = {node_id: i for i, node_id in enumerate(ids)}
        self.matrix = matrix

    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.matrix[[self.row[n] for n in node_ids]]


@dataclass(slots=True)
class Stream:
    """One conversation's precomputed global results (timed) and query vectors."""

    conv: Conversation
    vectors: MatrixVectors
    lexical: TermMatrix
    queries: npt.NDArray[np.float32]
    global_lists: list[list[Candidate]]
    global_ms: list[float]


def _median_ms(repeats: int, call: Any) -> tuple[Any, float]:
    times, result = [], None
    for _ in range(repeats):
        started = time.perf_counter()
        result = call()
        times.append((time.perf_counter() - started) * 1000.0)
    return result, float(np.median(times))


def prepare(conv: Conversation, embedder: Embedder, pool: int, repeats: int) -> tuple[Stream, float]:
    view = MemoryView(embedder=embedder)
    view.apply(conv.events)
    ids = list(conv.texts)
    vectors = MatrixVectors(ids, embedder.embed([conv.texts[n] for n in ids]))
    lexical = TermMatrix(ids, [conv.texts[n] for n in ids])
    started = time.perf_counter()
    queries = embedder.embed([q for q, _ in conv.questions])
    embed_ms = (time.perf_counter() - started) * 1000.0 / max(1, len(conv.questions))
    config = replace(HYBRID, pool=pool, timeout_ms=60_000.0)
    lists, times = [], []
    for (question, _), qv in zip(conv.questions, queries, strict=True):
        result, ms = _median_ms(
            repeats,
            lambda q=question, v=qv: hybrid_search(view, q, pool, conv.user, LAYERS, query_vector=v, config=config),
        )
        lists.append(result.candidates)
        times.append(ms)
    return Stream(conv, vectors, lexical, queries, lists, times), embed_ms


@dataclass(slots=True)
class Replay:
    hits: int = 0
    n: int = 0
    recall_with: float = 0.0
    recall_without: float = 0.0
    hit_ms: list[float] = field(default_factory=list)
    miss_ms: list[float] = field(default_factory=list)


def replay(stream: Stream, config: SlbConfig, repeats: int, out: Replay) -> None:
    """Feed the query stream through one session's SLB, scoring both paths."""
    buffer = LookasideBuffer(int(stream.queries.shape[1]), config)
    conv = stream.conv
    for i, ((question, gold), qv) in enumerate(zip(conv.questions, stream.queries, strict=True)):
        ranked_global = [conv.dia[c.node_id] for c in stream.global_lists[i]]
        out.recall_without += recall_at(ranked_global, gold, K)
        out.n += 1
        started = time.perf_counter()
        look = buffer.lookup(qv, 0)
        lookup_ms = (time.perf_counter() - started) * 1000.0
        if look.hit and look.entry is not None:
            entry = look.entry
            cands, ms = _median_ms(
                repeats, lambda e=entry, v=qv, q=question: rescore(e, v, stream.vectors, stream.lexical, q, limit=K)
            )
            out.hits += 1
            out.hit_ms.append(lookup_ms + ms)
            out.recall_with += recall_at([conv.dia[c.node_id] for c in cands], gold, K)
            continue
        found = stream.global_lists[i]
        started = time.perf_counter()
        buffer.insert(qv, [c.node_id for c in found], [c.score for c in found], None, 0)
        insert_ms = (time.perf_counter() - started) * 1000.0
        out.miss_ms.append(lookup_ms + stream.global_ms[i] + insert_ms)
        out.recall_with += recall_at(ranked_global, gold, K)


def _summary(r: Replay) -> dict[str, float]:
    """Latencies are medians over queries (robust to a shared machine's noise)."""
    hit_ms = float(np.median(r.hit_ms)) if r.hit_ms else 0.0
    miss_ms = float(np.median(r.miss_ms)) if r.miss_ms else 0.0
    return {
        "hit_rate": round(r.hits / max(1, r.n), 4),
        "hit_speedup": round(miss_ms / hit_ms, 2) if hit_ms > 0 else 0.0,
        "recall_loss": round((r.recall_without - r.recall_with) / max(1, r.n), 4),
        "recall@10_with_slb": round(r.recall_with / max(1, r.n), 4),
        "recall@10_without_slb": round(r.recall_without / max(1, r.n), 4),
        "hit_ms": round(hit_ms, 4),
        "miss_ms": round(miss_ms, 4),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    started = time.perf_counter()
    files = sorted(p for p in Path(args.data).glob("*.json"))
    conversations = [c for c in (load_conversation(p) for p in files) if c.questions]
    if not conversations:
        msg = f"no LoCoMo conversations with questions in {args.data}"
        raise SystemExit(msg)
    embedder = StaticEmbedder()
    streams: list[Stream] = []
    embed_ms: list[float] = []
    for conv in tqdm(conversations, desc="slb: global search", unit="conv", disable=None):
        stream, ms = prepare(conv, embedder, args.neighbourhood, args.repeats)
        streams.append(stream)
        embed_ms.append(ms)
    main = SlbConfig(capacity=args.capacity, tau_hit=args.tau, neighbourhood_size=args.neighbourhood)
    for stream in streams[:1]:  # warm-up (caches, first numpy calls), not scored
        replay(stream, main, 1, Replay())
    result = Replay()
    for stream in streams:
        replay(stream, main, args.repeats, result)
    summary = _summary(result)
    sweep: dict[str, dict[str, float]] = {}
    for tau in SWEEP_TAUS:
        r = Replay()
        for stream in streams:
            replay(stream, replace(main, tau_hit=tau), args.repeats, r)
        sweep[f"{tau:.2f}"] = {k: v for k, v in _summary(r).items() if k in ("hit_rate", "recall_loss", "hit_speedup")}
    goals = _goals(summary)
    return {
        **summary,
        "goals": GOALS,
        "goals_met": goals,
        "note": _note(goals),
        "tau_hit": args.tau,
        "capacity": args.capacity,
        "neighbourhood": args.neighbourhood,
        "questions": result.n,
        "conversations": len(streams),
        "embedder": embedder.name,
        "embed_ms_per_query": round(float(np.mean(embed_ms)), 4),
        "hit_path": "K-centroid lookup + hybrid re-score (cosine + BM25 weights) of the cached neighbourhood",
        "miss_path": "K-centroid lookup + global hybrid search (vector + BM25 over all turns) + LRU insert",
        "sweep_by_tau": sweep,
        "measured_under": "a shared 2-core machine (other work running); timings are noisy",
        "seconds": round(time.perf_counter() - started, 2),
    }


def _goals(summary: dict[str, float]) -> dict[str, bool]:
    return {
        "hit_rate": summary["hit_rate"] >= GOALS["hit_rate"],
        "hit_speedup": summary["hit_speedup"] >= GOALS["hit_speedup"],
        "recall_loss": summary["recall_loss"] <= GOALS["recall_loss"],
    }


def _note(goals: dict[str, bool]) -> str:
    reasons = {
        "hit_rate": "hit_rate: consecutive LoCoMo questions are mostly about different events, so few pass "
        "τ_hit (see sweep_by_tau: lowering τ raises hits but loses recall)",
        "hit_speedup": "hit_speedup: a LoCoMo memory holds only ~400-700 turns, so the global search is already "
        "fast (see miss_ms); the hit path's cost is re-scoring the M cached nodes, independent of the "
        "memory's size, so the ratio grows with it",
        "recall_loss": "recall_loss: the cached neighbourhood misses evidence that the global search finds",
    }
    missed = [reasons[name] for name, ok in goals.items() if not ok]
    return "all goals met" if not missed else "goal(s) missed: " + "; ".join(missed)
