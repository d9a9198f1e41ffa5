"""SLB on LoCoMo: hit rate, hit-path speedup and recall loss of the Semantic Lookaside Buffer.

Each LoCoMo conversation (a folder of ``<n>.json`` files) becomes one user's memory (a turn per
node, NEXT edges within a session) in an in-process ``MemoryView``; its QA questions of categories
1-4, in file order, are one session's query stream. For every question:

- without the SLB: the global hybrid search (vector + BM25, fused) → top 10;
- with the SLB: a lookup over K centroids; a hit re-scores the cached neighbourhood against the
  new query (cosine + BM25, O(K·d + M·(d + |query|))); a miss runs the global search and inserts its
  top M. An entry is laid out for scoring at its first hit, as the compiler lays it out
  (``layout_for``; ``layout_ms``, apart from ``hit_ms``); ``ms_per_question`` is all of it, misses,
  hits and layouts, over the questions.

``hit_speedup`` = median miss-path / median hit-path latency, same run, after a warm-up replay;
``search_speedup`` compares with the global search alone; query embedding (both paths) is apart.
``recall_loss`` = recall@10 without the SLB − with it; ``sweep_by_tau`` replays other τ_hit values;
``recall_loss_without_rescoring``: hits served in the cached order (no node vectors or BM25 weights).

Why the goals can or cannot hold is measured in the same run: ``inertia`` profiles the cosines
that decide hits (seed 000 Eq. 9: consecutive questions, best of the last K, best Atlas concept);
``designs`` compares the query-centroid buffer (Algorithm 1) with Atlas-concept centroids (the
concept's member turns re-scored on a hit). ``--memory-scale S`` adds a second run over memories
S times larger (distractor turns recombined from the other conversations), reported apart.

``stale_hits`` (goal 0) and ``staleness``: the first conversation through the worker's compile
path across a dream that makes cached nodes dormant and a restart (benchmarks/slb_staleness.py).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Final, TypeVar

import numpy as np
import numpy.typing as npt
from tqdm import tqdm

from engram.benchmarks.locomo_data import locomo_conversations
from engram.benchmarks.retrieval_metrics import recall_at
from engram.benchmarks.slb_memory import Conversation, load_conversation, with_distractors
from engram.benchmarks.slb_staleness import measure as measure_staleness
from engram.processors.embedding.base import Embedder
from engram.processors.embedding.minilm import MiniLMEmbedder
from engram.processors.embedding.static import StaticEmbedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import BALANCED as HYBRID
from engram.processors.retrieval.hybrid import hybrid_search
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import LookasideBuffer, MatrixVectors, SlbConfig, SlbEntry, layout_for, rescore
from engram.processors.slb.concepts import ConceptCentroids, concept_centroids
from engram.processors.slb.inertia import best_recent, embedder_inertia, inertia_report, profile
from engram.schemas.records import Layer

LAYERS: Final[tuple[Layer, ...]] = ("USER",)
GOALS: Final = {"hit_rate": 0.85, "hit_speedup": 10.0, "recall_loss": 0.01}
SWEEP_TAUS: Final = (0.95, 0.9, 0.85, 0.8, 0.75, 0.7, 0.65, 0.6, 0.55, 0.5)
K: Final = 10
HIT_WEIGHT: Final = HYBRID.vector_weight  # a hit fuses cosine and BM25 with the miss path's weights
T = TypeVar("T")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation JSON files")
    parser.add_argument("--capacity", type=int, default=32, help="K centroids (16-64)")
    parser.add_argument("--tau", type=float, default=0.85, help="hit threshold τ_hit (cosine)")
    parser.add_argument("--neighbourhood", type=int, default=128, help="M node ids cached per centroid")
    parser.add_argument("--repeats", type=int, default=3, help="timing repeats per path (median taken)")
    parser.add_argument(
        "--memory-scale", type=int, default=1, help="also run over memories S times larger (distractors), apart"
    )
    parser.add_argument(
        "--inertia-minilm", type=int, default=0, help="also profile inertia with MiniLM on the first N files (slow)"
    )


@dataclass(slots=True)
class Stream:
    """One conversation's precomputed global results (timed) and query vectors."""

    conv: Conversation
    vectors: MatrixVectors
    view: MemoryView  # the worker's hit-path providers: node vectors and BM25 layouts (as ContextCompiler)
    queries: npt.NDArray[np.float32]
    global_lists: list[list[Candidate]]
    global_ms: list[float]

    def ranked(self, candidates: Sequence[Candidate]) -> list[str]:
        return [self.conv.dia.get(c.node_id, "") for c in candidates]


def _median_ms(repeats: int, call: Callable[[], T]) -> tuple[T, float]:
    times: list[float] = []
    result = call()  # one untimed call: the result, and warm caches
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
    started = time.perf_counter()
    queries = embedder.embed([q for q, _ in conv.questions])
    embed_ms = (time.perf_counter() - started) * 1000.0 / max(1, len(conv.questions))
    config = replace(HYBRID, pool=pool, timeout_ms=60_000.0, max_nodes_visited=max(5000, 2 * len(ids)))
    lists, times = [], []
    for (question, _), qv in zip(conv.questions, queries, strict=True):
        search = partial(hybrid_search, view, question, pool, Viewer(conv.user), LAYERS, query_vector=qv, config=config)
        result, ms = _median_ms(repeats, search)
        lists.append(result.candidates)
        times.append(ms)
    return Stream(conv, vectors, view, queries, lists, times), embed_ms


@dataclass(slots=True)
class Replay:
    hits: int = 0
    n: int = 0
    recall_with: float = 0.0
    recall_without: float = 0.0
    recall_cached_order: float = 0.0  # hits served in the filling query's order (no re-scoring)
    hit_ms: list[float] = field(default_factory=list)
    miss_ms: list[float] = field(default_factory=list)
    search_ms: list[float] = field(default_factory=list)
    insert_ms: list[float] = field(default_factory=list)
    layout_ms: list[float] = field(default_factory=list)  # one per entry, at its first hit


def replay(stream: Stream, config: SlbConfig, repeats: int, out: Replay) -> None:
    """Feed the query stream through one session's SLB, scoring both paths."""
    buffer = LookasideBuffer(int(stream.queries.shape[1]), config)
    for i, ((question, gold), qv) in enumerate(zip(stream.conv.questions, stream.queries, strict=True)):
        ranked_global = stream.ranked(stream.global_lists[i])
        out.recall_without += recall_at(ranked_global, gold, K)
        out.n += 1
        started = time.perf_counter()
        look = buffer.lookup(qv, 0)
        lookup_ms = (time.perf_counter() - started) * 1000.0
        if look.hit and look.entry is not None:
            if look.entry.layout is None:  # laid out at the entry's first hit, as the compiler lays it out
                started = time.perf_counter()
                layout_for(look.entry, stream.view, stream.view)
                out.layout_ms.append((time.perf_counter() - started) * 1000.0)
            hit = partial(rescore, look.entry, qv, stream.view, stream.view, question, HIT_WEIGHT, K)
            cands, ms = _median_ms(repeats, hit)
            out.hits += 1
            out.hit_ms.append(lookup_ms + ms)
            out.recall_with += recall_at(stream.ranked(cands), gold, K)
            out.recall_cached_order += recall_at(stream.ranked(rescore(look.entry, qv, None)), gold, K)
            continue
        found = stream.global_lists[i]
        started = time.perf_counter()
        buffer.insert(qv, [c.node_id for c in found], [c.score for c in found], None, 0)
        insert_ms = (time.perf_counter() - started) * 1000.0
        out.miss_ms.append(lookup_ms + stream.global_ms[i] + insert_ms)
        out.search_ms.append(stream.global_ms[i])
        out.insert_ms.append(insert_ms)
        out.recall_with += recall_at(ranked_global, gold, K)
        out.recall_cached_order += recall_at(ranked_global, gold, K)


def _med(values: list[float]) -> float:
    return float(np.median(values)) if values else 0.0


def _summary(r: Replay) -> dict[str, float]:
    """Latencies are medians over queries (robust to a shared machine's noise)."""
    hit_ms, miss_ms, search_ms = _med(r.hit_ms), _med(r.miss_ms), _med(r.search_ms)
    return {
        "hit_rate": round(r.hits / max(1, r.n), 4),
        "hit_speedup": round(miss_ms / hit_ms, 2) if hit_ms > 0 else 0.0,
        "search_speedup": round(search_ms / hit_ms, 2) if hit_ms > 0 else 0.0,
        "recall_loss": round((r.recall_without - r.recall_with) / max(1, r.n), 4),
        "recall@10_with_slb": round(r.recall_with / max(1, r.n), 4),
        "recall@10_without_slb": round(r.recall_without / max(1, r.n), 4),
        "recall_loss_without_rescoring": round((r.recall_without - r.recall_cached_order) / max(1, r.n), 4),
        "hit_ms": round(hit_ms, 4),
        "miss_ms": round(miss_ms, 4),
        "search_ms": round(search_ms, 4),
        "insert_ms": round(_med(r.insert_ms), 4),
        "layout_ms": round(_med(r.layout_ms), 4),
        "ms_per_question": round((sum(r.hit_ms) + sum(r.miss_ms) + sum(r.layout_ms)) / max(1, r.n), 4),
    }


def _scored_run(streams: list[Stream], config: SlbConfig, repeats: int) -> dict[str, float]:
    for stream in streams[:1]:  # warm-up (caches, first numpy calls), not scored
        replay(stream, config, 1, Replay())
    result = Replay()
    for stream in streams:
        replay(stream, config, repeats, result)
    return {**_summary(result), "questions": result.n}


def _concept_replay(streams: list[Stream], atlases: list[ConceptCentroids], tau: float) -> dict[str, float]:
    """Atlas concepts as centroids (all staged): a hit re-scores the best concept's member turns."""
    hits, n, loss, sizes = 0, 0, 0.0, list[float]()
    for stream, atlas in zip(streams, atlases, strict=True):
        for i, ((question, gold), qv) in enumerate(zip(stream.conv.questions, stream.queries, strict=True)):
            n += 1
            best, sim = atlas.lookup(qv)
            if best < 0 or sim <= tau:
                continue
            hits += 1
            entry = SlbEntry(0, qv, atlas.members[best], (0.0,) * len(atlas.members[best]), None, 0, 0)
            sizes.append(float(len(entry.node_ids)))
            cands = rescore(entry, qv, stream.view, stream.view, question, HIT_WEIGHT, K)
            loss += recall_at(stream.ranked(stream.global_lists[i]), gold, K) - recall_at(stream.ranked(cands), gold, K)
    return {
        "hit_rate": round(hits / max(1, n), 4),
        "recall_loss": round(loss / max(1, n), 4),
        "median_members": _med(sizes),
    }


def _best_within_loss(by_tau: dict[str, dict[str, float]]) -> float:
    ok = [row["hit_rate"] for row in by_tau.values() if row["recall_loss"] <= GOALS["recall_loss"]]
    return max(ok, default=0.0)


def _designs(streams: list[Stream], main: SlbConfig, sweep: dict[str, dict[str, float]]) -> dict[str, object]:
    atlases = [
        concept_centroids(list(s.conv.texts), s.vectors.matrix[[s.vectors.row[n] for n in s.conv.texts]])
        for s in streams
    ]
    concept_sweep = {f"{tau:.2f}": _concept_replay(streams, atlases, tau) for tau in SWEEP_TAUS}
    ceiling = np.concatenate([best_recent(s.queries, main.capacity, _neighbourhood_centroids(s)) for s in streams])
    return {
        "query_centroids": {
            "what": f"Algorithm 1: centroid = the missed query, pointer = its top-{main.neighbourhood_size} hybrid "
            f"neighbourhood, K={main.capacity} LRU",
            "by_tau": {t: {k: row[k] for k in ("hit_rate", "recall_loss")} for t, row in sweep.items()},
            "best_hit_rate_with_recall_loss<=0.01": _best_within_loss(sweep),
        },
        "atlas_concepts": {
            "what": "Eq. 14 best case: every Atlas concept (Trace BALANCED) staged as a centroid; a hit re-scores "
            "the concept's member turns (incl. its children's) with the same hybrid scoring",
            "concepts": [len(a.concept_ids) for a in atlases],
            "by_tau": concept_sweep,
            "best_hit_rate_with_recall_loss<=0.01": _best_within_loss(concept_sweep),
        },
        "neighbourhood_centroids": {
            "what": f"centroid = unit mean of the cached top-{main.neighbourhood_size} turn vectors; best sim to "
            f"those of the previous {main.capacity} questions (the hit ceiling of this design)",
            "ceiling": profile(ceiling, main.tau_hit).as_dict(),
        },
    }


def _neighbourhood_centroids(stream: Stream) -> npt.NDArray[np.float32]:
    out = np.zeros(stream.queries.shape, dtype=np.float32)
    for i, found in enumerate(stream.global_lists):
        if found:
            mean = stream.vectors.node_vectors([c.node_id for c in found]).mean(axis=0)
            out[i] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return out


def _scaled(
    conversations: list[Conversation],
    embedder: Embedder,
    args: argparse.Namespace,
    main: SlbConfig,
    base: tuple[float, float],
) -> dict[str, object]:
    """The same stream over memories `--memory-scale` times larger; `base` = (nodes, search_ms) at
    LoCoMo size, for the global search's growth per 1,000 nodes (the hit path does not grow)."""
    streams = []
    for conv in tqdm(conversations, desc=f"slb: global search x{args.memory_scale}", unit="conv", disable=None):
        pool = [t for other in conversations if other.user != conv.user for t in other.texts.values()]
        streams.append(prepare(with_distractors(conv, pool, args.memory_scale), embedder, args.neighbourhood, 1)[0])
    nodes = float(np.mean([len(s.conv.texts) for s in streams]))
    summary = _scored_run(streams, main, 1)
    growth = (summary["search_ms"] - base[1]) / max(1.0, nodes - base[0]) * 1000.0
    return {
        "memory_scale": args.memory_scale,
        "nodes_per_memory": int(nodes),
        **summary,
        "search_ms_growth_per_1k_nodes": round(growth, 4),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    started = time.perf_counter()
    found = locomo_conversations(Path(args.data))
    conversations = [c for c in (load_conversation(name, data) for name, data in found) if c.questions]
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
    summary = _scored_run(streams, main, args.repeats)
    sweep = {f"{tau:.2f}": _scored_run(streams, replace(main, tau_hit=tau), 1) for tau in SWEEP_TAUS}
    turns = [s.vectors.matrix[[s.vectors.row[n] for n in s.conv.dia]] for s in streams]
    result: dict[str, object] = {
        **summary,
        "goals": GOALS,
        "goals_met": _goals(summary),
        "tau_hit": args.tau,
        "capacity": args.capacity,
        "neighbourhood": args.neighbourhood,
        "conversations": len(streams),
        "nodes_per_memory": int(np.mean([len(s.conv.texts) for s in streams])),
        "embedder": embedder.name,
        "embed_ms_per_query": round(float(np.mean(embed_ms)), 4),
        "hit_path": "K-centroid lookup + hybrid re-score (cosine + BM25 weights, laid out by the worker's "
        "MemoryView at the entry's first hit) of the cached neighbourhood",
        "miss_path": "K-centroid lookup + global hybrid search (vector + BM25 over all turns) + LRU insert",
        "sweep_by_tau": {
            t: {k: row[k] for k in ("hit_rate", "recall_loss", "recall_loss_without_rescoring", "hit_speedup")}
            for t, row in sweep.items()
        },
        "inertia": {"embedder": embedder.name, **inertia_report([s.queries for s in streams], turns, main)},
        "designs": _designs(streams, main, sweep),
    }
    if args.inertia_minilm > 0:
        picked = conversations[: args.inertia_minilm]
        print(f"slb: MiniLM inertia over {len(picked)} file(s), about a minute each", file=sys.stderr)
        questions = [[q for q, _ in c.questions] for c in picked]
        turns_text = [[c.texts[n] for n in c.dia] for c in picked]
        result["inertia_minilm"] = embedder_inertia(MiniLMEmbedder(), questions, turns_text, main)
    if args.memory_scale > 1:
        base = (float(np.mean([len(s.conv.texts) for s in streams])), summary["search_ms"])
        result["scaled"] = _scaled(conversations, embedder, args, main, base)
    result.update(measure_staleness(conversations[0], embedder, main))  # stale_hits: goal 0
    result["note"] = _note(_goals(summary))
    result["measured_under"] = "a shared 2-core machine (other work running); timings are noisy"
    result["seconds"] = round(time.perf_counter() - started, 2)
    return result


def _goals(summary: dict[str, float]) -> dict[str, bool]:
    return {
        "hit_rate": summary["hit_rate"] >= GOALS["hit_rate"],
        "hit_speedup": summary["hit_speedup"] >= GOALS["hit_speedup"],
        "recall_loss": summary["recall_loss"] <= GOALS["recall_loss"],
    }


def _note(goals: dict[str, bool]) -> str:
    reasons = {
        "hit_rate": "hit_rate: Eq. 9 does not hold on this stream; the share of questions within τ_hit of any "
        "centroid caps the hit rate (see 'inertia', 'designs'; a lower τ buys hits with recall loss)",
        "hit_speedup": "hit_speedup: the global search over a LoCoMo-sized memory is already fast (see search_ms); "
        "the hit path does not depend on the memory's size (see 'scaled' with --memory-scale)",
        "recall_loss": "recall_loss: the cached neighbourhood misses evidence that the global search finds",
    }
    missed = [reasons[name] for name, ok in goals.items() if not ok]
    return "all goals met" if not missed else "goal(s) missed: " + "; ".join(missed)
