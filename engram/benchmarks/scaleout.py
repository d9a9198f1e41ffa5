"""Scale-out: one worker, then two workers in one group, over the same turns on the same partitions.

Each run has its own embedded stack. Once the workers share the partitions (steady), both runs
publish the same warm-up and measured turns; a run is done when the workers' /metrics (summed)
show every turn ingested and every memory event applied.
The derived events are compared by digest: the distinct events of engram.memory (by event id, each
with its Avro bytes), sorted, hashed. Two workers must derive exactly what one derives, whichever
partitions each owned. For each run: turns/s, and per worker the turns it ingested and its CPU per
turn. ``speedup`` is the two-worker rate over the one-worker rate, measured in the same bench run
(on this 2-core machine two workers share the cores, so it says what a second core buys).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from engram.benchmarks.ingest import make_turns, texts
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess, metric_value

TURNS: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
MEMORY: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=4000, help="turns to publish in each run")
    parser.add_argument("--users", type=int, default=40, help="distinct users (keys)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--data", type=Path, default=None, help="a folder of LoCoMo files to take texts from")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds to wait for each run")


def progress(line: str) -> None:
    print(f"[bench scaleout] {line}", file=sys.stderr, flush=True)


def totals(workers: list[WorkerProcess]) -> dict[str, float]:
    """Ingested turns, memory events produced and the least any sink applied, over the workers."""
    texts_ = [w.scrape() or "" for w in workers]
    applied = [
        sum(metric_value(t, "engram_sink_applied_total", {"sink": s}) for t in texts_) for s in ("qdrant", "graph")
    ]
    return {
        "ingested": sum(metric_value(t, "engram_ingest_messages_total") for t in texts_),
        "memory_events": sum(metric_value(t, "engram_memory_events_total") for t in texts_),
        "applied": min(applied),
    }


def wait_done(workers: list[WorkerProcess], turns: int, timeout_s: float) -> dict[str, float]:
    deadline = time.monotonic() + timeout_s
    while True:
        counts = totals(workers)
        if counts["ingested"] >= turns and counts["memory_events"] > 0 and counts["applied"] >= counts["memory_events"]:
            return counts
        if time.monotonic() > deadline:
            msg = f"the pipeline did not finish in {timeout_s:.0f}s: {counts}"
            raise TimeoutError(msg)
        time.sleep(0.2)


def wait_balanced(workers: list[WorkerProcess], topic: str, partitions: int, timeout_s: float) -> None:
    """Until every worker owns some of ``topic``'s partitions, together all of them, for two
    seconds: a rebalance during the measured run would redeliver what a worker had not committed."""
    deadline = time.monotonic() + timeout_s
    steady_since: float | None = None
    while time.monotonic() < deadline:
        owned = [metric_value(w.scrape() or "", "engram_assigned_partitions", {"topic": topic}) for w in workers]
        balanced = sum(owned) == partitions and min(owned) > 0
        steady_since = (steady_since or time.monotonic()) if balanced else None
        if steady_since is not None and time.monotonic() - steady_since >= 2.0:
            return
        time.sleep(0.2)
    msg = f"the workers did not share {topic}'s {partitions} partitions within {timeout_s:.0f}s"
    raise TimeoutError(msg)


def digest(config: EngramConfig) -> tuple[str, int]:
    """The distinct derived events of engram.memory, by event id, hashed; and how many there are."""
    events: dict[str, bytes] = {}
    for message in read_topic(config.bootstrap_servers, config.topics.memory, timeout_s=120):
        raw = message.value() or b""
        event_id = MEMORY.decode(raw)["event_id"]
        if events.setdefault(event_id, raw) != raw:
            return f"event {event_id} derived twice with different content", len(events)
    hashed = hashlib.sha256()
    for event_id in sorted(events):
        hashed.update(event_id.encode())
        hashed.update(events[event_id])
    return hashed.hexdigest(), len(events)


def one_run(args: argparse.Namespace, n_workers: int, turns: list[ConversationTurn]) -> dict[str, Any]:
    from engram.infra.config import StackConfig
    from engram.infra.launcher import EmbeddedStack

    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-scaleout-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack")) as stack,
    ):
        host, port = stack.require_falkordb()
        base = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(), falkordb_host=host, falkordb_port=port,
            app_id="engram-bench-scaleout", partitions=args.partitions, data_dir=Path(tmp) / "data-0",
            web_port=free_port(), broker_profile="standin",
        )  # fmt: skip
        configs = [base] + [
            replace(base, data_dir=Path(tmp) / f"data-{i}", web_port=free_port()) for i in range(1, n_workers)
        ]
        ensure_topics(base.bootstrap_servers, base.topics.every, base.partitions)
        workers = [WorkerProcess(c, Path(tmp) / f"worker-{i}.log").start() for i, c in enumerate(configs)]
        try:
            wait_balanced(workers, base.topics.memory, base.partitions, args.timeout)  # co-partitioned with turns
            publisher = Publisher(base.bootstrap_servers)
            warm = make_turns(200, 5, ["warm up the embedder"])
            for t in warm:
                publisher.publish(base.topics.turns, b"warm-" + t["user_id"].encode(), TURNS.encode(t))
            publisher.flush()
            wait_done(workers, len(warm), args.timeout)
            before = [(w.cpu_seconds, metric_value(w.scrape() or "", "engram_ingest_messages_total")) for w in workers]
            progress(f"{n_workers} worker(s): publishing {len(turns)} turns")
            started = time.perf_counter()
            for t in turns:
                publisher.publish(base.topics.turns, t["user_id"].encode(), TURNS.encode(t))
            publisher.flush()
            wait_done(workers, len(warm) + len(turns), args.timeout)
            seconds = time.perf_counter() - started
            per_worker = []
            for worker, (cpu_before, ingested_before) in zip(workers, before, strict=True):
                ingested = metric_value(worker.scrape() or "", "engram_ingest_messages_total") - ingested_before
                cpu = worker.cpu_seconds - cpu_before
                per_worker.append({"turns": int(ingested), "turns_per_s": round(ingested / seconds, 1),
                                   "cpu_us_per_turn": round(cpu / max(ingested, 1) * 1e6, 1)})  # fmt: skip
        finally:
            for worker in workers:
                worker.stop()
        hashed, events = digest(base)
    return {"workers": n_workers, "turns_per_s": round(len(turns) / seconds, 1), "seconds": round(seconds, 3),
            "per_worker": per_worker, "digest": hashed, "derived_events": events}  # fmt: skip


def run(args: argparse.Namespace) -> dict[str, Any]:
    turns = make_turns(args.turns, args.users, texts(args.data))
    one = one_run(args, 1, turns)
    two = one_run(args, 2, turns)
    return {
        "turns": args.turns, "users": args.users, "partitions": args.partitions,
        "one_worker": one, "two_workers": two, "identical": one["digest"] == two["digest"],
        "speedup": round(two["turns_per_s"] / max(one["turns_per_s"], 1e-9), 3),
    }  # fmt: skip
