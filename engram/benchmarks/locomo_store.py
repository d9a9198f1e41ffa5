"""LoCoMo recall with System 1 reading from Qdrant (`benchmarks.qdrant_lists`): the whole view's
reranks (``--qdrant-lists``) or a view holding each conversation's last turns (``--hot-set``); and
the worker's own view with its hot set capped (``--view-hot-turns``, `view_hot_set`)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

import numpy as np
from tqdm import tqdm

from engram.benchmarks.locomo import LAYERS, Conversation, Scores, score_questions
from engram.benchmarks.qdrant_lists import HotSetTally, StoreRanker, capped_view, in_store, store_fields, upserted
from engram.benchmarks.retrieval_metrics import recall_at
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer
from engram.processors.retrieval.hybrid import HybridConfig


def store_recall(
    conversations: Sequence[Conversation], embedder: Embedder, config: HybridConfig, hot_turns: int | None = None
) -> dict[str, object]:
    """recall@10 overall and by category; with ``hot_turns``, the view holds only each
    conversation's last ``hot_turns`` turns."""
    by_category: dict[int, list[float]] = {}
    everything: list[float] = []
    rankers: list[StoreRanker] = []
    held = total = 0
    for conv in conversations:
        turns = [n for n in upserted(conv.events) if n in conv.dia_ids]
        held += len(turns) if hot_turns is None else min(len(turns), max(hot_turns, 0))
        total += len(turns)
        vectors = embedder.embed([q.text for q in conv.questions])
        with in_store(conv.events, turns, int(vectors.shape[1]), hot_turns) as ranker:
            for q, vector in zip(conv.questions, vectors, strict=True):
                ranking = ranker.ranking(q.text, vector, config.pool, Viewer(conv.name), LAYERS, config)
                ranked = [conv.dia_ids[c.node_id] for c in ranking if c.node_id in conv.dia_ids]
                value = recall_at(ranked, set(q.evidence), 10)
                everything.append(value)
                by_category.setdefault(q.category, []).append(value)
            rankers.append(ranker)
    hot = {} if hot_turns is None else {"hot_turns_per_conversation": hot_turns}
    return {
        **hot,
        "recall@10": round(float(np.mean(everything)), 4) if everything else 0.0,
        "recall@10_by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(by_category.items())},
        **store_fields(rankers, held, total),
    }


def view_hot_set(
    conversations: Sequence[Conversation], embedder: Embedder, config: HybridConfig, args: argparse.Namespace,
    whole: Scores,
) -> dict[str, object]:  # fmt: skip
    """The bench's questions again, each conversation in a view as the worker keeps it with
    ``args.view_hot_turns`` (`qdrant_lists.capped_view`): recall and budget recall, their change
    from ``whole`` (the uncapped run's), and what the views kept in RAM and read back."""
    scores = Scores({}, {})
    tally = HotSetTally(args.view_hot_turns)
    fallbacks: dict[str, int] = {}
    total = sum(len(c.questions) for c in conversations)
    with tqdm(total=total, desc="locomo hot set", unit="q", disable=None) as progress:
        for conv in conversations:
            with capped_view(args.view_hot_turns, embedder) as view:
                score_questions(conv, embedder, config, args.budget, scores, tally.latencies_ms, fallbacks, progress,
                                view)  # fmt: skip
                tally.add(view, len(conv.questions))
    key = f"budget_recall@{args.budget}"
    return {
        "recall@10": scores.mean("recall@10"),
        "recall@10_change": round(scores.mean("recall@10") - whole.mean("recall@10"), 4),
        "recall@10_by_category": {str(c): round(float(np.mean(v)), 4) for c, v in sorted(scores.by_category.items())},
        key: scores.budget_recall(),
        f"{key}_change": round(scores.budget_recall() - whole.budget_recall(), 4),
        **tally.fields(),
        "fallbacks": fallbacks,
    }
