"""Throughput of the pure TraceBuilder (no broker, no sinks) and of its embedder alone.

Replays the LoCoMo conversations in ``--data`` as many times as needed to reach ``--turns`` turns
(each copy under a new user id, so concepts and sessions start fresh per copy), in batches of
``--batch``, and prints one JSON object: turns/s end to end through ``apply_batch``, turns/s of the
embedder alone on the same texts (also per CPU second, a steadier figure on a shared machine),
and how many events, nodes and edges came out.

Usage: ``.venv/bin/python -m engram.benchmarks.trace_builder --data ../shared/benchdata/locomo [--turns 20000]``
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

from engram.benchmarks.locomo_reader import conversation_turns
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.config import PRESETS
from engram.schemas.records import ConversationTurn, EventRef


def workload(data: Path, turns: int) -> list[tuple[ConversationTurn, EventRef]]:
    conversations = [(f.stem, json.loads(f.read_text())) for f in sorted(data.glob("*.json"))]
    items: list[tuple[ConversationTurn, EventRef]] = []
    copy = 0
    while len(items) < turns:
        for conv, raw in conversations:
            for t in conversation_turns(raw, f"{conv}-{copy}"):
                items.append((t, {"topic": "engram.turns", "partition": 0, "offset": len(items)}))
        copy += 1
    return items[:turns]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--turns", type=int, default=20_000)
    parser.add_argument("--batch", type=int, default=500)
    parser.add_argument("--preset", choices=sorted(PRESETS), default="balanced")
    args = parser.parse_args()
    items = workload(args.data, args.turns)
    builder = TraceBuilder(PRESETS[args.preset])
    builder.embedder.embed(["warm up"])
    builder.token_counter.count("warm up")

    start, cpu = time.perf_counter(), time.process_time()
    texts = [t["content"] for t, _ in items]
    for i in range(0, len(texts), args.batch):
        builder.embedder.embed(texts[i : i + args.batch])
    embed_s, embed_cpu = time.perf_counter() - start, time.process_time() - cpu

    kinds: Counter[str] = Counter()
    start, cpu = time.perf_counter(), time.process_time()
    for i in range(0, len(items), args.batch):
        for event in builder.apply_batch(items[i : i + args.batch]):
            record, change = event["change"]
            kinds[str(change.get("kind") or change.get("edge_type") or record)] += 1
    build_s, build_cpu = time.perf_counter() - start, time.process_time() - cpu
    result = {
        "turns": len(items),
        "batch": args.batch,
        "preset": args.preset,
        "embedder": builder.embedder.name,
        "builder_turns_per_s": round(len(items) / build_s, 1),
        "embedder_turns_per_s": round(len(items) / embed_s, 1),
        # Per CPU second of this process (all its threads): what one uncontended core would do.
        "builder_turns_per_cpu_s": round(len(items) / build_cpu, 1),
        "embedder_turns_per_cpu_s": round(len(items) / embed_cpu, 1),
        "memory_events": sum(kinds.values()),
        "by_kind": dict(sorted(kinds.items())),
    }
    print(json.dumps(result, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
