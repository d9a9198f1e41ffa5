"""Ingest throughput end to end: turns published → worker → engram.memory → every sink applied.

Starts the embedded stack and one worker, publishes N turns (texts from LoCoMo conversations when
`--data` is given, else generated sentences), and times from the first publish until the worker's
/metrics show every turn ingested and every memory event applied by every sink.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.locomo_data import locomo_turn_texts
from schemas.codec import AvroCodec
from schemas.records import ConversationTurn
from streams.admin import Publisher, ensure_topics
from streams.config import EngramConfig
from streams.demo import count_memory, free_port
from streams.runner import WorkerProcess, metric_value

WORDS = [
    "alice",
    "bob",
    "moved",
    "city",
    "job",
    "started",
    "painting",
    "hiking",
    "trip",
    "dog",
    "cat",
    "sister",
    "brother",
    "coffee",
    "tea",
    "python",
    "rust",
    "garden",
    "guitar",
    "concert",
    "book",
    "novel",
    "marathon",
    "running",
    "beach",
    "mountain",
    "paris",
    "tokyo",
    "recipe",
    "pasta",
    "promotion",
    "meeting",
    "deadline",
    "project",
    "launch",
    "friend",
    "birthday",
    "party",
    "movie",
    "weekend",
    "holiday",
    "support",
    "group",
    "school",
]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=20000, help="turns to publish")
    parser.add_argument("--users", type=int, default=50, help="distinct users (keys)")
    parser.add_argument("--data", type=Path, default=None, help="a folder of LoCoMo files to take texts from")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the pipeline")


def texts(data: Path | None) -> list[str]:
    if data is not None:
        found = locomo_turn_texts(data)
        if found:
            return found
    return [" ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(8 + i % 12)) for i in range(997)]


def make_turns(n: int, users: int, corpus: list[str]) -> list[ConversationTurn]:
    turns: list[ConversationTurn] = []
    for i in range(n):
        user = f"bench-user-{i % users}"
        index = i // users
        turns.append(
            {
                "turn_id": f"bench-{i}",
                "user_id": user,
                "agent_id": "bench",
                "flow_id": None,
                "session_id": f"{user}-s{index // 40}",
                "turn_index": index,
                "role": "user" if index % 2 == 0 else "assistant",
                "content": corpus[i % len(corpus)],
                "event_time_ms": 1_700_000_000_000 + i * 1000,
                "layer": "USER",
                "causal_parent_ids": [],
                "tool_calls": [],
                "metadata": {},
            }
        )
    return turns


def progress(line: str) -> None:
    print(f"[bench ingest] {line}", file=sys.stderr, flush=True)


def pipeline_done(worker: WorkerProcess, turns: int) -> tuple[bool, dict[str, float]]:
    text = worker.scrape() or ""
    ingested = metric_value(text, "engram_ingest_messages_total")
    produced = metric_value(text, "engram_memory_events_total")
    applied = {s: metric_value(text, "engram_sink_applied_total", {"sink": s}) for s in ("qdrant", "graph")}
    applied = {s: v for s, v in applied.items() if v}
    done = ingested >= turns and produced > 0 and bool(applied) and min(applied.values()) >= produced
    return done, {"ingested": ingested, "memory_events": produced, **{f"applied_{k}": v for k, v in applied.items()}}


def run(args: argparse.Namespace) -> dict[str, Any]:
    from infra.config import StackConfig
    from infra.launcher import EmbeddedStack

    turns = make_turns(args.turns, args.users, texts(args.data))
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    payloads = [(t["user_id"].encode(), codec.encode(t)) for t in turns]
    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-ingest-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack")) as stack,
    ):
        config = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(),
            falkordb_host=stack.require_falkordb()[0],
            falkordb_port=stack.require_falkordb()[1],
            app_id="engram-bench-ingest",
            partitions=args.partitions,
            data_dir=Path(tmp) / "data",
            web_port=free_port(),
            broker_profile="standin",
        )
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        with WorkerProcess(config, Path(tmp) / "worker.log") as worker:
            # Warm up: the first batch pays model loading and group assignment, which is not throughput.
            warm = make_turns(200, 5, ["warm up the embedder"])
            publisher = Publisher(config.bootstrap_servers)
            for t in warm:
                publisher.publish(config.topics.turns, b"warm-" + t["user_id"].encode(), codec.encode(t))
            publisher.flush()
            wait(worker, len(warm), args.timeout)
            baseline = pipeline_done(worker, 0)[1]
            progress(f"publishing {len(payloads)} turns for {args.users} users")
            started = time.perf_counter()
            for key, value in payloads:
                publisher.publish(config.topics.turns, key, value)
            publisher.flush()
            published_s = time.perf_counter() - started
            counts = wait(worker, len(payloads) + len(warm), args.timeout)
            seconds = time.perf_counter() - started
        _, nodes, edges = count_memory(config)
    memory_events = counts["memory_events"] - baseline["memory_events"]
    return {
        "turns": args.turns,
        "users": args.users,
        "partitions": args.partitions,
        "turns_per_s": round(args.turns / seconds, 1),
        "seconds": round(seconds, 3),
        "publish_seconds": round(published_s, 3),
        "memory_events": int(memory_events),
        "memory_events_per_s": round(memory_events / seconds, 1),
        "nodes": nodes,
        "edges": edges,
        "nodes_edges_note": "distinct live ids on engram.memory, including the 200 warm-up turns",
        "sinks": sorted(k.removeprefix("applied_") for k in counts if k.startswith("applied_")),
        "embedder": embedder_name(),
        "path": "broker: publish -> worker (admit, archive, trace, facts) -> engram.memory -> sinks + view applied",
    }


def wait(worker: WorkerProcess, turns: int, timeout_s: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    last = 0.0
    while True:
        done, counts = pipeline_done(worker, turns)
        if done:
            return counts
        if time.monotonic() > deadline:
            msg = f"pipeline did not finish in {timeout_s:.0f}s: {counts}"
            raise TimeoutError(msg)
        if counts["ingested"] - last >= 2000:
            last = counts["ingested"]
            progress(f"ingested {int(last)} / {turns}")
        time.sleep(0.2)


def embedder_name() -> str:
    from processors.embedding import default_embedder

    return default_embedder().name
