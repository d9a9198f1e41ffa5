"""Compare embedders on LoCoMo evidence retrieval and speed (numbers for the Trace issue's note).

For each conversation file in ``--data`` (a folder of LoCoMo JSON files): embed every turn, then for
each QA item with evidence (categories 1-4) rank the conversation's turns by cosine to the
question and count how many evidence dia_ids are in the top k. Reports recall@k (mean over
questions) and turns/s for each embedder.

Usage: ``.venv/bin/python -m engram.benchmarks.embedders --data ../shared/benchdata/locomo [--k 10] [--skip-minilm]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from engram.benchmarks.locomo_reader import conversation_turns, evidence_ids
from engram.processors.embedding.base import Embedder
from engram.processors.embedding.minilm import MiniLMEmbedder
from engram.processors.embedding.static import StaticEmbedder


def evaluate(embedder: Embedder, files: list[Path], k: int) -> dict[str, float]:
    hits = total = questions = 0
    recall_sum = 0.0
    turns_seen = 0
    embed_s = 0.0
    for path in files:
        data = json.loads(path.read_text())
        turns = conversation_turns(data, path.stem)
        dia = [t["metadata"]["dia_id"] for t in turns]
        start = time.perf_counter()
        vectors = embedder.embed([t["content"] for t in turns])
        embed_s += time.perf_counter() - start
        turns_seen += len(turns)
        qa = [q for q in data.get("qa", []) if q.get("category") in (1, 2, 3, 4)]
        qa = [(q, set(evidence_ids(q.get("evidence", [])))) for q in qa]
        qa = [(q, ev) for q, ev in qa if ev]
        queries = embedder.embed([str(q["question"]) for q, _ in qa])
        ranks = np.argsort(-(queries @ vectors.T), axis=1, kind="stable")[:, :k]
        for row, (_, ev) in zip(ranks, qa, strict=True):
            found = len(ev & {dia[i] for i in row})
            hits += found
            total += len(ev)
            recall_sum += found / len(ev)
            questions += 1
    return {
        "recall_at_k": round(recall_sum / max(questions, 1), 4),
        "evidence_hit_rate": round(hits / max(total, 1), 4),
        "questions": questions,
        "turns": turns_seen,
        "turns_per_s": round(turns_seen / embed_s, 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--skip-minilm", action="store_true")
    args = parser.parse_args()
    files = sorted(args.data.glob("*.json"))
    embedders: list[Embedder] = [StaticEmbedder()]
    if not args.skip_minilm:
        embedders.append(MiniLMEmbedder())
    result = {e.name: evaluate(e, files, args.k) for e in embedders}
    print(json.dumps({"k": args.k, "files": [f.name for f in files], "embedders": result}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
