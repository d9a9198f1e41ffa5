"""LoCoMo evidence recall of System 1 retrieval (hybrid, BM25-only and vector-only in one run).

For each LoCoMo conversation in ``--data`` (a folder of ``<n>.json`` files with flat keys
``speaker_a``, ``session_N``, ``qa``, or of the list-shaped ``locomo10.json``), the turns go
through the Trace (``processors.trace``: the LoCoMo reader, then ``TraceBuilder``, which embeds
them with the default embedder) and the
MemoryEvents are applied to an in-process ``MemoryView`` (the broker path is wired elsewhere). Every QA item
of categories 1-4 with non-empty normalized evidence is asked; a question's recall@k is the share
of its evidence turns (dia_ids) in the top k, averaged over questions.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
from tqdm import tqdm

from engram.benchmarks import qdrant_lists
from engram.benchmarks.locomo_data import locomo_conversations
from engram.benchmarks.locomo_reader import LocomoFormatError, conversation_turns
from engram.benchmarks.retrieval_metrics import canonical_dia_id, normalize_evidence, recall_at
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import PRESETS, Fusion, HybridConfig, RetrievalResult, hybrid_search, rank_lists
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.processors.tokens import default_token_counter
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.emit import EVENT_KIND
from engram.schemas.changes import change_as
from engram.schemas.records import ContextRequest, EventRef, Layer, MemoryEvent, NodeUpserted

CATEGORIES: Final = (1, 2, 3, 4)
LAYERS: Final[tuple[Layer, ...]] = ("USER",)
RECALL_DEFINITION: Final = "fraction of a question's evidence turns found in the top k, averaged over questions"
_PLAIN = HybridConfig(  # fusion alone
    context_hits=0, author_boost=0.0, newer_depth=0, when_boost=0.0, anchor_boost=0.0, term_weight=0.0
)
_RRF = replace(_PLAIN, fusion=Fusion.RRF)
_MINMAX = replace(_PLAIN, fusion=Fusion.MINMAX)
_ZSCORE = replace(_PLAIN, fusion=Fusion.ZSCORE)
_RERANKS = HybridConfig()
# Measured side by side on the same candidate lists (recall@10): fusion rules, then the reranks.
VARIANTS: Final[dict[str, HybridConfig]] = {
    "rrf": _RRF,
    **{f"minmax_w{w}": replace(_MINMAX, vector_weight=w) for w in (0.3, 0.4, 0.5, 0.7)},
    **{f"zscore_w{w}": replace(_ZSCORE, vector_weight=w) for w in (0.3, 0.5, 0.7)},
    "minmax_w0.4+context": replace(_MINMAX, context_hits=_RERANKS.context_hits),
    "minmax_w0.4+author": replace(_MINMAX, author_boost=_RERANKS.author_boost),
    "rrf+context+author": replace(_RERANKS, fusion=Fusion.RRF),
    **{f"zscore_w{w}+context+author": replace(_RERANKS, fusion=Fusion.ZSCORE, vector_weight=w) for w in (0.3, 0.5)},
    **{
        f"minmax_w{w}+context+author": replace(_RERANKS, fusion=Fusion.MINMAX, vector_weight=w) for w in (0.3, 0.4, 0.5)
    },
    # Ablation of the current reranks against the previous defaults (author_boost 1.0, context_prev 0.2,
    # no separate weight for the reply to a question).
    "default_with_author_boost1.0": replace(_RERANKS, author_boost=1.0),
    "default_with_context_prev0.2": replace(_RERANKS, context_prev=0.2),
    "default_without_context_answer": replace(_RERANKS, context_answer=None),
    "previous_default": replace(_RERANKS, author_boost=1.0, context_prev=0.2, context_answer=None),
    # Ablation of the date reranks (turns that state a date for "when" questions; a named date).
    "default_without_when": replace(_RERANKS, when_boost=0.0),
    "default_without_anchor": replace(_RERANKS, anchor_boost=0.0),
    # Ablation of soft term matching (each query word matched by meaning to a turn's closest word).
    "default_without_terms": replace(_RERANKS, term_weight=0.0),
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--data", type=Path, required=True, help="folder of LoCoMo conversation JSON files")
    parser.add_argument("--preset", choices=sorted(PRESETS), default="balanced")
    parser.add_argument("--budget", type=int, default=1000, help="token budget for budget_recall (cl100k)")
    parser.add_argument("--no-vectors", action="store_true", help="measure without an embedder")
    qdrant_lists.add_arguments(parser, "conversation")


@dataclass(frozen=True, slots=True)
class Question:
    text: str
    category: int
    evidence: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Conversation:
    name: str
    events: list[MemoryEvent]
    dia_ids: dict[str, str]  # node id -> canonical dia_id
    questions: list[Question]


def conversation_events(name: str, data: dict[str, Any], builder: TraceBuilder) -> list[MemoryEvent]:
    """The conversation's turns through the Trace (ConversationTurns -> MemoryEvents), in order."""
    turns = conversation_turns(data, name, caption_in_content=True)
    items = [(t, EventRef(topic="engram.turns", partition=0, offset=i)) for i, t in enumerate(turns)]
    return builder.apply_batch(items)


def load_conversation(name: str, data: dict[str, Any], builder: TraceBuilder) -> Conversation:
    events = conversation_events(name, data, builder)
    dia_ids: dict[str, str] = {}
    for event in events:
        node = change_as(event, NodeUpserted)
        if node is not None and (dia_id := canonical_dia_id(node["properties"].get("dia_id", ""))) is not None:
            dia_ids[node["node_id"]] = dia_id
    existing = set(dia_ids.values())
    questions = []
    for item in data.get("qa", []):
        if item.get("category") not in CATEGORIES:
            continue
        evidence = normalize_evidence(item.get("evidence", []), existing)
        if evidence:
            questions.append(Question(str(item["question"]), int(item["category"]), tuple(evidence)))
    return Conversation(name, events, dia_ids, questions)


def budget_fill(ranked: Sequence[Candidate], view: MemoryView, budget: int) -> list[str]:
    """Greedy: take ranked nodes in order while they fit in ``budget`` tokens (skip what does not)."""
    used = 0
    chosen: list[str] = []
    for cand in ranked:
        record = view.node(cand.node_id)
        if record is None or used + record.tokens > budget:
            continue
        used += record.tokens
        chosen.append(cand.node_id)
    return chosen


@dataclass(slots=True)
class Scores:
    sums: dict[str, float]
    by_category: dict[int, list[float]]
    n: int = 0

    def add(self, name: str, value: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + value

    def mean(self, name: str) -> float:
        return round(self.sums.get(name, 0.0) / max(self.n, 1), 4)

    def budget_recall(self) -> float:
        """Budget recall as `budget_fields` reports it: the compiled context's, else the greedy fill's."""
        return self.mean("budget_compiled" if "budget_compiled" in self.sums else "budget_greedy")


def _score_question(
    q: Question, result: RetrievalResult, view: MemoryView, conv: Conversation, budget: int, scores: Scores,
    compiled: Callable[[Question, list[Candidate] | None], list[str]] | None, *, variants: bool = True,
) -> None:  # fmt: skip
    def dia(cands: Sequence[Candidate]) -> list[str]:
        return [conv.dia_ids[c.node_id] for c in cands]

    gold = set(q.evidence)
    ranked = dia(result.candidates)
    scores.n += 1
    scores.add("recall@5", recall_at(ranked, gold, 5))
    scores.add("recall@10", recall_at(ranked, gold, 10))
    scores.by_category.setdefault(q.category, []).append(recall_at(ranked, gold, 10))
    packed = dia([Candidate(n, 0.0, "") for n in budget_fill(result.candidates, view, budget)])
    scores.add("budget_greedy", recall_at(packed, gold, len(packed)))
    if compiled is not None:
        for name, seeds in (("budget_compiled", result.candidates), ("budget_compiled_own_seeds", None)):
            ids = [conv.dia_ids[n] for n in compiled(q, seeds) if n in conv.dia_ids]
            scores.add(name, recall_at(ids, gold, len(ids)))
    text, vector = result.lists.get("bm25", []), result.lists.get("vector", [])
    scores.add("bm25_recall@10", recall_at(dia(text), gold, 10))
    scores.add("vector_recall@10", recall_at(dia(vector), gold, 10))
    if not (text and vector and variants):
        return
    for name, variant in VARIANTS.items():
        ranking, _ = rank_lists(view, q.text, result.lists, LAYERS, variant, max_visits=1000)
        scores.add(f"cmp:{name}", recall_at(dia(ranking), gold, 10))


def score_questions(
    conv: Conversation, embedder: Embedder | None, config: HybridConfig, budget: int, scores: Scores,
    latencies: list[float], fallbacks: dict[str, int], progress: tqdm[Any], view: MemoryView | None = None,
) -> None:  # fmt: skip
    """Score the conversation's questions on ``view`` (by default a view of its own, everything in
    RAM); with a view given, the fusion variants are not compared."""
    variants = view is None
    if view is None:
        view = MemoryView(ViewConfig(vector_index=embedder is not None))
    view.apply(conv.events)
    user = conv.name
    compiled = _compiled_items(view, embedder, conv, budget) if embedder is not None else None
    vectors = embedder.embed([q.text for q in conv.questions]) if embedder is not None else None
    for i, q in enumerate(conv.questions):
        started = time.perf_counter()
        qv = vectors[i] if vectors is not None else None
        result = hybrid_search(view, q.text, config.pool, Viewer(user), LAYERS, query_vector=qv, config=config)
        latencies.append((time.perf_counter() - started) * 1000.0)
        for name in result.fallbacks:
            fallbacks[name] = fallbacks.get(name, 0) + 1
        _score_question(q, result, view, conv, budget, scores, compiled, variants=variants)
        progress.update(1)


def run(args: argparse.Namespace) -> dict[str, object]:
    started = time.perf_counter()
    found = locomo_conversations(args.data)
    if not found:
        msg = f"no LoCoMo conversations in {args.data}"
        raise SystemExit(msg)
    builder = TraceBuilder()
    conversations: list[Conversation] = []
    skipped: dict[str, str] = {}
    for name, data in found:
        try:
            conversations.append(load_conversation(name, data, builder))
        except (LocomoFormatError, KeyError, TypeError, ValueError) as exc:  # one bad conversation never stops the run
            skipped[name] = f"{type(exc).__name__}: {exc}"
    embedder = None if args.no_vectors else builder.embedder
    # Bench runs measure quality: a generous timeout keeps results independent of machine load.
    # Turns are what LoCoMo scores: search event nodes only (not the Atlas concept labels).
    config = replace(PRESETS[args.preset], timeout_ms=60_000.0, kinds=frozenset({EVENT_KIND}))
    scores = Scores({}, {})
    latencies: list[float] = []
    fallbacks: dict[str, int] = {}
    total = sum(len(c.questions) for c in conversations)
    with tqdm(total=total, desc="locomo", unit="q", disable=None) as progress:
        for conv in conversations:
            score_questions(conv, embedder, config, args.budget, scores, latencies, fallbacks, progress)
    comparison = {k[4:]: scores.mean(k) for k in sorted(scores.sums) if k.startswith("cmp:")}
    from_qdrant: dict[str, object] = {}
    if embedder is not None and (getattr(args, "qdrant_lists", False) or getattr(args, "hot_set", None) is not None):
        from engram.benchmarks.locomo_store import store_recall  # it imports this module

        if getattr(args, "qdrant_lists", False):
            from_qdrant["lists_from_qdrant"] = store_recall(conversations, embedder, config)
        if getattr(args, "hot_set", None) is not None:
            from_qdrant["hot_set"] = store_recall(conversations, embedder, config, args.hot_set)
    if embedder is not None and getattr(args, "view_hot_turns", None) is not None:
        from engram.benchmarks.locomo_store import view_hot_set

        from_qdrant["view_hot_set"] = view_hot_set(conversations, embedder, config, args, scores)
    return {
        "path": "in-process",
        "recall_definition": RECALL_DEFINITION,
        "recall@5": scores.mean("recall@5"),
        "recall@10": scores.mean("recall@10"),
        "recall@10_by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(scores.by_category.items())},
        **budget_fields(scores, args.budget, config.pool),
        "bm25_recall@10": scores.mean("bm25_recall@10"),
        "vector_recall@10": scores.mean("vector_recall@10"),
        "fusion": _describe(config),
        "fusion_comparison_recall@10": comparison,
        "fallbacks": fallbacks,
        "search_ms_p50": round(float(np.percentile(latencies, 50)), 3) if latencies else 0.0,
        "questions": scores.n,
        "conversations": len(conversations),
        "skipped_conversations": skipped,
        "embedder": embedder.name if embedder is not None else "none",
        **from_qdrant,
        "seconds": round(time.perf_counter() - started, 2),
    }


def _describe(config: HybridConfig) -> str:
    return (
        f"{config.fusion.value} vector_weight={config.vector_weight} pool={config.pool}; "
        f"context next={config.context_next} prev={config.context_prev} answer={config.context_answer} "
        f"hits={config.context_hits}; "
        f"author_boost={config.author_boost}"
    )


def _compiled_items(
    view: MemoryView, embedder: Embedder, conv: Conversation, budget: int
) -> Callable[[Question, list[Candidate] | None], list[str]] | None:
    """Node ids of the compiled context (processors.compiler) for a question, or None without it."""
    try:
        from engram.processors.compiler.compiler import ContextCompiler
    except ImportError:
        return None
    compiler = ContextCompiler(view, embedder, default_token_counter())
    now_ms = max(e["event_time_ms"] for e in conv.events)
    asked = iter(range(1 << 30))

    def compile_ids(q: Question, seeds: list[Candidate] | None) -> list[str]:
        request: ContextRequest = {
            "request_id": f"{conv.name}-{next(asked)}", "user_id": conv.name, "session_id": f"{conv.name}-bench",
            "query": q.text, "token_budget": budget, "authorized_layers": list(LAYERS), "intent_hint": None,
            "agent_id": None, "event_time_ms": now_ms,
        }  # fmt: skip
        return [item["node_id"] for item in compiler.compile(request, candidates=seeds)["items"]]

    return compile_ids


def budget_fields(scores: Scores, budget: int, depth: int) -> dict[str, object]:
    greedy = f"greedy fill of the hybrid ranking (top {depth}) into {budget} cl100k tokens"
    if "budget_compiled" not in scores.sums:
        return {f"budget_recall@{budget}": scores.mean("budget_greedy"), "budget_method": greedy}
    return {
        f"budget_recall@{budget}": scores.mean("budget_compiled"),
        "budget_method": "processors.compiler.ContextCompiler (PPR + knapsack + order) seeded with the "
        "hybrid ranking; _greedy: " + greedy + "; _compiler_own_seeds: the compiler's own seeds",
        f"budget_recall@{budget}_greedy": scores.mean("budget_greedy"),
        f"budget_recall@{budget}_compiler_own_seeds": scores.mean("budget_compiled_own_seeds"),
    }
