"""Compile latency end to end: ContextRequest → CompiledContext through the real broker and a worker.

Starts the embedded stack and one worker, builds a memory of ``--nodes`` event nodes by publishing
MemoryEvents straight to engram.memory (NodeUpserted with embeddings from the default embedder,
plus NEXT edges within each session, spread over ``--users`` users, layer USER) and waits until the
worker's store agent has applied every one. Building the same memory through ingest would take
minutes at the current ingest speed; the compile path only reads what the store agent applied.

Then it sends ``--requests`` ContextRequests paced at ``--rate`` per second and times each from the
producer's send (monotonic clock) to the receipt of its CompiledContext on engram.context.compiled
(a consumer assigned at the topic's end, reading in a background thread). p50/p99 are over every
measured request; the warm-up requests (one per user, sent first) are reported apart.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from benchmarks.compile_floor import floor_summary, measure_floor, typical
from benchmarks.compile_measure import measure, percentile
from benchmarks.ingest import WORDS, texts
from benchmarks.locomo_data import locomo_conversations
from schemas.codec import AvroCodec
from schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from schemas.records import EDGE_UPSERTED, NODE_UPSERTED, ContextRequest, EventRef, MemoryEvent
from streams.admin import Publisher, ensure_topics
from streams.config import EngramConfig
from streams.demo import free_port
from streams.runner import WorkerProcess, metric_value

GOALS: Final = {"p50_ms": 10.0, "p99_ms": 50.0}
BASE_TIME_MS: Final = 1_700_000_000_000
SESSION_TURNS: Final = 40
SOURCE_TOPIC: Final = "engram.bench.compile"  # provenance of the synthetic nodes (no real input topic)
QUESTION_FORMS: Final = (
    "What did I say about {a} and {b}?",
    "When did we talk about the {a}?",
    "Why did the {a} matter for the {b}?",
    "How has my {a} changed over time, and what led to the {b}?",
    "Summarize everything about {a}.",
    "Who was at the {a} with me?",
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=100_000, help="event nodes in the memory")
    parser.add_argument("--users", type=int, default=50, help="users the nodes are spread over")
    parser.add_argument("--rate", type=float, default=100.0, help="requests per second")
    parser.add_argument("--requests", type=int, default=1000, help="measured requests")
    parser.add_argument("--budget", type=int, default=1000, help="token budget of each request")
    parser.add_argument("--data", type=Path, default=None, help="a folder of LoCoMo files (turn texts, questions)")
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--graph", action="store_true", help="also run the FalkorDB graph sink (slower load)")
    parser.add_argument("--timeout", type=float, default=1200.0, help="seconds to wait for the memory to load")
    parser.add_argument(
        "--probe-rate", type=float, default=20.0, help="a low rate measured too: the latency floor without queueing"
    )
    parser.add_argument("--probe-requests", type=int, default=200, help="requests sent at --probe-rate (0: none)")
    parser.add_argument(
        "--floor-requests",
        type=int,
        default=500,
        help="requests answered with no compile at --rate, the broker's share (0: none)",
    )


def progress(line: str) -> None:
    print(f"[bench compile] {line}", file=sys.stderr, flush=True)


# --- the memory --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Memory:
    payloads: list[tuple[bytes, bytes]]
    nodes: int
    edges: int


def memory_events(nodes: int, users: int, corpus: Sequence[str]) -> list[MemoryEvent]:
    """Event nodes i = 0..nodes-1 (user i % users), embedded once per distinct text, NEXT-linked
    within each session of SESSION_TURNS nodes, keyed by user id."""
    from processors.embedding import default_embedder
    from processors.tokens import default_token_counter

    distinct = sorted({corpus[i % len(corpus)] for i in range(min(nodes, len(corpus)))})
    vectors = default_embedder().embed(distinct)
    counter = default_token_counter()
    table = {t: (vectors[row].tolist(), counter.count(t)) for row, t in enumerate(distinct)}
    events: list[MemoryEvent] = []
    for i in range(nodes):
        user, index = f"bench-user-{i % users}", i // users
        text = corpus[i % len(corpus)]
        embedding, tokens = table[text]
        when = BASE_TIME_MS + i * 1000
        node_id = stable_id("bench-compile", user, index)
        source: list[EventRef] = [{"topic": SOURCE_TOPIC, "partition": 0, "offset": i}]
        change = node_upserted(
            node_id, "event", "USER", when, text=text, tokens=tokens, user_id=user,
            session_id=f"{user}-s{index // SESSION_TURNS}", embedding=embedding,
            properties={"speaker": "user" if index % 2 == 0 else "assistant"},
        )  # fmt: skip
        events.append(memory_event(user, when, source, NODE_UPSERTED, change))
        if index % SESSION_TURNS:
            edge = edge_upserted("NEXT", stable_id("bench-compile", user, index - 1), node_id, "USER")
            events.append(memory_event(user, when, source, EDGE_UPSERTED, edge))
    return events


def build_memory(nodes: int, users: int, corpus: Sequence[str]) -> Memory:
    """``memory_events``, encoded for the memory topic."""
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    events = memory_events(nodes, users, corpus)
    payloads = [(e["key"].encode(), codec.encode(e)) for e in events]
    return Memory(payloads, nodes, sum(1 for e in events if e["change"][0] == EDGE_UPSERTED))


def questions(data: Path | None) -> list[str]:
    """LoCoMo QA questions when ``--data`` holds them, else generated ones over the corpus words."""
    if data is not None:
        found = [
            str(qa["question"]) for _, conv in locomo_conversations(data) for qa in conv["qa"] if qa.get("question")
        ]
        if found:
            return found
    forms = QUESTION_FORMS
    return [
        forms[i % len(forms)].format(a=WORDS[(i * 5) % len(WORDS)], b=WORDS[(i * 11 + 3) % len(WORDS)])
        for i in range(300)
    ]


def make_requests(count: int, users: int, asked: Sequence[str], start: int, budget: int) -> list[ContextRequest]:
    out: list[ContextRequest] = []
    for i in range(start, start + count):
        user = f"bench-user-{i % users}"
        out.append(
            {
                "request_id": stable_id("bench-compile-request", i),
                "user_id": user,
                "session_id": f"{user}-asks",
                "query": asked[(i * 7) % len(asked)],
                "token_budget": budget,
                "authorized_layers": ["USER"],
                "intent_hint": None,
                "agent_id": "bench",
                "event_time_ms": BASE_TIME_MS + 10**9 + i,
            }
        )
    return out


# --- measuring: benchmarks/compile_measure.py, and the floor in compile_floor.py ----------------


def bound(result: dict[str, Any]) -> str:
    """One line on what bounds the latency: queueing in a saturated worker, the compile itself, or
    the trip through the broker."""
    compile_ms, outside_ms = result["compile_p50_ms"], result["outside_compile_p50_ms"]
    stages = {k: v for k, v in result["stages_p50_ms"].items() if k != "total"}
    slowest = max(stages, key=lambda k: stages[k]) if stages else "?"
    split = (
        f"p50 {result['p50_ms']} ms = compile {compile_ms} ms (slowest stage {slowest} {stages.get(slowest)} ms) "
        f"+ {outside_ms} ms outside the compile: {result['worker_wait_p50_ms']} ms queued in the worker, "
        f"{result['wire_p50_ms']} ms on the wire (produce, broker hop to the worker, encode, hop to the reader)"
    )
    if result["answered_per_s"] < 0.9 * result["rate"]:
        return (
            f"worker saturated: it answered {result['answered_per_s']}/s of {result['rate']}/s offered (mean compile "
            f"{result['compile_mean_ms']} ms plus per-request overhead on one event loop), so requests queue: "
            f"p50 {result['first_decile_p50_ms']} ms in the first tenth, {result['last_decile_p50_ms']} ms in the "
            f"last; {split}"
        )
    where = "compile in the worker" if compile_ms >= outside_ms else "broker + consumer round trip"
    floor = result.get("broker_floor")
    if floor:
        split += f"; with no compile at all the same trip takes p50 {floor['p50_ms']} / p99 {floor['p99_ms']} ms"
    return f"{split}; bound by {where}"


def memory_loaded(worker: WorkerProcess, expected: int, timeout_s: float) -> float:
    """Wait until the store agent applied ``expected`` events to qdrant; returns seconds waited."""
    started = time.monotonic()
    last = -1.0
    while True:
        applied = metric_value(worker.scrape() or "", "engram_sink_applied_total", {"sink": "qdrant"})
        if applied >= expected:
            return time.monotonic() - started
        if time.monotonic() - started > timeout_s:
            msg = f"memory not applied in {timeout_s:.0f}s: {applied:.0f} of {expected} events"
            raise TimeoutError(msg)
        if applied - last >= 20_000 or last < 0:
            last = applied
            progress(f"applied {applied:.0f} / {expected} memory events")
        time.sleep(1.0)


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The memory's payloads stay alive to the end; out of this process's full GC passes, they
    cannot stall the reader thread that timestamps the replies (streams/heap.py: measured cost)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def worker_config(stack: Any, tmp: Path, args: argparse.Namespace) -> EngramConfig:
    falkordb = stack.require_falkordb() if args.graph else (None, None)
    return EngramConfig(
        bootstrap_servers=stack.require_bootstrap_servers(),
        falkordb_host=falkordb[0],
        falkordb_port=falkordb[1],
        app_id="engram-bench-compile",
        partitions=args.partitions,
        data_dir=tmp / "data",
        web_port=free_port(),
        broker_profile="standin",
    )


def run(args: argparse.Namespace) -> dict[str, Any]:
    from infra.config import StackConfig
    from infra.launcher import EmbeddedStack

    started = time.monotonic()
    progress(f"building {args.nodes} event nodes for {args.users} users")
    memory = build_memory(args.nodes, args.users, texts(args.data))
    asked = questions(args.data)
    warm = make_requests(args.users, args.users, asked, 0, args.budget)
    measured = make_requests(args.requests, args.users, asked, args.users, args.budget)
    probe = make_requests(args.probe_requests, args.users, asked, args.users + args.requests, args.budget)
    echoed = make_requests(
        args.floor_requests, args.users, asked, args.users + args.requests + args.probe_requests, args.budget
    )
    with (
        frozen_heap(),
        tempfile.TemporaryDirectory(prefix="engram-bench-compile-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack", falkordb=args.graph)) as stack,
    ):
        config = worker_config(stack, Path(tmp), args)
        ensure_topics(config.bootstrap_servers, config.topics.archived, config.partitions)
        with WorkerProcess(config, Path(tmp) / "worker.log") as worker:
            progress(f"publishing {len(memory.payloads)} MemoryEvents to {config.topics.memory}")
            load_started = time.monotonic()
            publisher = Publisher(config.bootstrap_servers)
            for key, value in memory.payloads:
                publisher.publish(config.topics.memory, key, value)
            publisher.flush(120.0)
            memory_loaded(worker, len(memory.payloads), args.timeout)
            load_s = time.monotonic() - load_started
            progress(f"memory applied in {load_s:.1f}s; {len(warm)} warm-up then {len(measured)} requests")
            load_before = os.getloadavg()[0]
            cold, low, hot = measure(config, [(warm, args.rate), (probe, args.probe_rate), (measured, args.rate)])
            load_after = os.getloadavg()[0]
            floor = measure_floor(config, typical(hot.compiled), echoed, args.rate) if echoed and hot.compiled else None
    result = hot.summary()
    result.update(
        {
            "nodes": memory.nodes,
            "edges": memory.edges,
            "users": args.users,
            "requests": args.requests,
            "rate": args.rate,
            "budget": args.budget,
            "warmup_requests": len(warm),
            "warmup_p50_ms": percentile(cold.latencies_ms, 50),
            "warmup_p99_ms": percentile(cold.latencies_ms, 99),
            "probe": low.probe_summary(args.probe_rate),
            "broker_floor": floor_summary(floor, args.rate),
            "machine": {
                "cpus": os.cpu_count(),
                "load_avg_1m": [round(load_before, 2), round(load_after, 2)],
                "note": "load average before and after the measured requests; the worker shares these CPUs",
            },
            "memory": "published as MemoryEvents",
            "memory_texts": "LoCoMo turns" if args.data else "generated sentences",
            "sinks": ["qdrant", "graph", "view"] if args.graph else ["qdrant", "view"],
            "graph_sink": "on (FalkorDB)" if args.graph else "off: falkordb_host unset; qdrant + in-process view",
            "load_seconds": round(load_s, 2),
            "goals": GOALS,
            "goals_met": result["p50_ms"] <= GOALS["p50_ms"] and result["p99_ms"] <= GOALS["p99_ms"],
            "seconds": round(time.monotonic() - started, 2),
            "path": "produce ContextRequest -> broker -> worker engram.compile -> engram.context.compiled -> consumer",
        }
    )
    result["bound"] = bound(result)
    return result
