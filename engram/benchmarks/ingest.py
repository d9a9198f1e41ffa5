"""Ingest throughput end to end: turns published → worker → engram.memory → every sink applied.

Starts the embedded stack and one worker, publishes N turns (texts from LoCoMo conversations when
`--data` is given, else generated sentences), and times from the first publish until the worker's
/metrics show every turn ingested and every memory event applied by every sink.

CPU, not wall time, is the budget a shared machine does not distort: ``cpu_us_per_turn`` is the
worker process's CPU time (user + system) over the run per turn, and ``cpu_us_per_turn_by_stage``
splits it by the stages the worker times on their own threads (``engram_stage_cpu_seconds``:
decode, each keyed step (trace, facts, dream, code), encode, produce, each sink, the view, state
writes); ``other`` is the rest (Faust and the client libraries' own threads, the loop);
``cpu_us_per_turn_by_thread`` splits the whole by thread name (Python's threads against
librdkafka's native ones, ``rdk:…``). Rates of
the first and last fifth of the run give ``late_vs_early`` (goal >= 0.8: a user's thousandth
turn costs what their tenth does), measured at the end of the pipeline: the fifths of the memory
events every sink applied (``ingest_late_vs_early``: the same at the front, the turns admitted,
which runs ahead of the stages behind it as far as the worker's backpressure lets it: ``pacing``
gives its bound, the largest backlog the worker reported and the seconds its inputs were paused;
``--max-backlog 0`` runs the worker unpaced). ``gc_cpu_us_per_turn`` is the cyclic garbage
collector's CPU by generation and ``gc_share`` its share of the worker's
(``engram_gc_cpu_seconds_total``: inside the stages' time, not beside it);
``cpu_us_per_turn_by_fifth`` and ``gc_share_by_fifth`` give both over each fifth of the memory
events applied, where a cost that grows with history shows. ``offset_gaps_read_back`` counts the
ranges of records an agent never received and read back from the broker (streams/repairs/gaps.py): 0 on a
healthy run. ``view_snapshots``: the view's snapshots written during the run (sinks/viewstate.py),
their forked writers' CPU per turn (not in ``cpu_us_per_turn``) and the newest one's size.
``state_disk_reads``: the state reads the tables on disk answered past their cache of decoded
values (streams/tablestore.py; ``--state-store`` picks the store, ``state_store`` names it).
``view_store``: whether the worker's view had its store for dormant nodes (``--view-store``), and
``view_hot_turns`` the cap on each user's live turns in RAM (``--view-hot-turns``; 0: none).
``broker_records_per_turn``: the records the run added to the broker's engram topics (turns, memory,
the replica, the tables' changelogs), per turn, and ``broker_records_per_turn_by_topic`` the same
per topic, most first (issue 50 item 3: what a turn costs the broker).
``--restart`` then kills the worker and times its restart (``restart``: benchmarks/ingest_restart.py).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Final, NamedTuple

from engram.benchmarks.broker_records import records_by_topic, records_gained
from engram.benchmarks.ingest_measures import (
    Sample,
    WorkerSample,
    by_thread,
    cpu_budget,
    cpu_by_fifth,
    early_late,
    gc_budget,
    rss_by_fifth,
)
from engram.benchmarks.ingest_restart import restart
from engram.benchmarks.locomo_data import locomo_turn_texts
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.config import STATE_STORES, EngramConfig
from engram.streams.demo import count_memory, free_port
from engram.streams.runner import WorkerProcess, metric_value, process_cpu_seconds

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
    parser.add_argument("--user-gap-ms", type=int, default=USER_GAP_MS,
                        help="event time between one user's consecutive turns, whatever --users is (the users' "
                        "turns interleave evenly inside it)")  # fmt: skip
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for the pipeline")
    parser.add_argument("--max-backlog", type=int, default=EngramConfig().ingest_max_backlog,
                        help="the worker's ENGRAM_INGEST_MAX_BACKLOG (0: its inputs are never paused)")  # fmt: skip
    parser.add_argument("--view-snapshot-events", type=int, default=EngramConfig().view_snapshot_events,
                        help="the worker's ENGRAM_VIEW_SNAPSHOT_EVENTS (0: no snapshots of the view)")  # fmt: skip
    parser.add_argument("--state-store", choices=STATE_STORES, default=EngramConfig().state_store,
                        help="the worker's ENGRAM_STATE_STORE (where its state tables live)")  # fmt: skip
    parser.add_argument("--view-store", choices=("on", "off"), default="on" if EngramConfig().view_store else "off",
                        help="the worker's ENGRAM_VIEW_STORE (dormant nodes leave RAM for a Qdrant)")  # fmt: skip
    parser.add_argument("--view-hot-turns", type=int, default=EngramConfig().view_hot_turns, metavar="TURNS",
                        help="the worker's ENGRAM_VIEW_HOT_TURNS (live turns a user holds in RAM)")  # fmt: skip
    parser.add_argument("--restart", action="store_true",
                        help="then kill the worker and time its restart (benchmarks/ingest_restart.py)")  # fmt: skip


def texts(data: Path | None) -> list[str]:
    if data is not None:
        found = locomo_turn_texts(data)
        if found:
            return found
    return [" ".join(WORDS[(i * 7 + j * 13) % len(WORDS)] for j in range(8 + i % 12)) for i in range(997)]


def make_turns(n: int, users: int, corpus: list[str], gap_ms: int = 1000) -> list[ConversationTurn]:
    """``n`` turns round-robin over ``users``, sessions of 40 turns per user, ``gap_ms`` apart."""
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
                "event_time_ms": 1_700_000_000_000 + i * gap_ms,
                "layer": "USER",
                "causal_parent_ids": [],
                "tool_calls": [],
                "metadata": {},
            }
        )
    return turns


def progress(line: str) -> None:
    print(f"[bench ingest] {line}", file=sys.stderr, flush=True)


def pipeline_done(text: str, turns: int) -> tuple[bool, dict[str, float]]:
    """Whether the worker's /metrics (``text``) show ``turns`` ingested and every memory event
    applied by every sink, and the counts the bench reads from them."""
    ingested = metric_value(text, "engram_ingest_messages_total")
    produced = metric_value(text, "engram_memory_events_total")
    applied = {s: metric_value(text, "engram_sink_applied_total", {"sink": s}) for s in ("qdrant", "graph")}
    applied = {s: v for s, v in applied.items() if v}
    done = ingested >= turns and produced > 0 and bool(applied) and min(applied.values()) >= produced
    pacing = {"backlog": metric_value(text, "engram_memory_backlog"),
              "paced_s": metric_value(text, "engram_ingest_paced_seconds_total"),
              "gaps": metric_value(text, "engram_offset_gaps_total")}  # fmt: skip
    gc_s = {f"gc_{g}": metric_value(text, "engram_gc_cpu_seconds_total", {"generation": str(g)}) for g in range(3)}
    return done, {"ingested": ingested, "memory_events": produced, **pacing, **gc_s,
                  **{f"applied_{k}": v for k, v in applied.items()}}  # fmt: skip


# A user's turns 50 s apart in event time (sessions of 40 turns: about half an hour), as the
# default 50 users a second apart always had. Spacing the run's turns a fixed second apart instead
# made a user's turns `users` seconds apart: with 1,000 users, 17 minutes, past dreaming's idle
# time (10 minutes), so every turn closed a session and was dreamt on its own (12.7 memory events
# and 12 ms of worker CPU a turn, against 5.9 and 2.6 ms with 50 users).
USER_GAP_MS: Final = 50_000
NODES_EDGES: Final = "distinct live ids on engram.memory, including the 200 warm-up turns"
# How often the bench reads the worker's /metrics: each scrape costs the worker the exposition's CPU
# (at 5 a second it was 3% of the worker's Python time), and the run's end is known to within this.
SAMPLE_S: Final = 0.5
PATH: Final = "broker: publish -> worker (admit, archive, trace, facts) -> engram.memory -> sinks + view applied"


def run(args: argparse.Namespace) -> dict[str, Any]:
    from engram.benchmarks.ingest_bounds import embedder_name, embedding_decode_us, qdrant_point_us
    from engram.infra.config import FALKORDB, KAFKA, StackConfig
    from engram.infra.launcher import EmbeddedStack

    turns = make_turns(args.turns, args.users, texts(args.data), gap_ms=max(1, args.user_gap_ms // args.users))
    with tempfile.TemporaryDirectory(prefix="engram-bench-ingest-") as tmp:
        launcher = EmbeddedStack(StackConfig(root=Path(tmp) / "stack"))
        with launcher as stack:
            config = EngramConfig(
                bootstrap_servers=stack.require_bootstrap_servers(),
                falkordb_host=stack.require_falkordb()[0],
                falkordb_port=stack.require_falkordb()[1],
                app_id="engram-bench-ingest",
                partitions=args.partitions,
                data_dir=Path(tmp) / "data",
                web_port=free_port(),
                broker_profile="standin",
                ingest_max_backlog=args.max_backlog,
                view_snapshot_events=args.view_snapshot_events,
                state_store=args.state_store,
                view_store=args.view_store == "on",
                view_hot_turns=args.view_hot_turns,
            )
            pids = {r.name: r.pid for r in launcher.records}
            servers = Servers(broker=pids[KAFKA], graph=pids[FALKORDB])
            result = _measure(args, config, turns, servers, Path(tmp) / "worker.log")
            _, nodes, edges = count_memory(config)
            upsert = _graph_upsert_us(*stack.require_falkordb())
    bounds = {"embedding_decode_us": embedding_decode_us(), "qdrant_point_us": qdrant_point_us(),
              "graph_upsert_us": upsert}  # fmt: skip
    return {**result, "nodes": nodes, "edges": edges, "nodes_edges_note": NODES_EDGES, **bounds,
            "embedder": embedder_name(), "path": PATH}  # fmt: skip


def _measure(
    args: argparse.Namespace, config: EngramConfig, turns: list[ConversationTurn], servers: Servers, log: Path
) -> dict[str, Any]:
    """Warm a worker up, publish the turns and time them through; the worker's (and the broker's
    and graph server's) CPU, stages, rates and RSS."""
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    payloads = [(t["user_id"].encode(), codec.encode(t)) for t in turns]
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    with WorkerProcess(config, log) as worker:
        # Warm up: the first batch pays model loading and group assignment, which is not throughput.
        warm = make_turns(200, 5, ["warm up the embedder"])
        publisher = Publisher(config.bootstrap_servers)
        for t in warm:
            publisher.publish(config.topics.turns, b"warm-" + t["user_id"].encode(), codec.encode(t))
        publisher.flush()
        rss_warm = wait(worker, len(warm), args.timeout, servers)[2][-1].rss_mb
        baseline = pipeline_done(worker.scrape() or "", 0)[1]
        cpu_before, stages_before = worker.cpu_seconds, stage_cpu(worker)
        broker_before, graph_before = process_cpu_seconds(servers.broker), process_cpu_seconds(servers.graph)
        threads_before, children_before = worker.thread_cpu_seconds, worker.children_cpu_seconds
        held = records_by_topic(config.bootstrap_servers, "engram")
        progress(f"publishing {len(payloads)} turns for {args.users} users")
        started = time.perf_counter()
        for key, value in payloads:
            publisher.publish(config.topics.turns, key, value)
        publisher.flush()
        published_s = time.perf_counter() - started
        counts, samples, rss = wait(worker, len(payloads) + len(warm), args.timeout, servers)
        records = records_gained(held, records_by_topic(config.bootstrap_servers, "engram"))
        seconds = time.perf_counter() - started
        cpu_s, stages = worker.cpu_seconds - cpu_before, stage_cpu(worker)
        threads = by_thread(threads_before, worker.thread_cpu_seconds, args.turns)
        broker_s = process_cpu_seconds(servers.broker) - broker_before
        graph_s = process_cpu_seconds(servers.graph) - graph_before
        text = worker.scrape() or ""
        snapshots = view_snapshots(text, worker.children_cpu_seconds - children_before, args.turns)
        disk_reads = int(metric_value(text, "engram_state_disk_reads_total"))
        restarted = {"restart": restart(worker, turns, log.with_name("worker-restart.log"))} if args.restart else {}
    memory_events = counts["memory_events"] - baseline["memory_events"]
    applied = (_applied(baseline), _applied(counts))
    return {
        "turns": args.turns,
        "users": args.users,
        "user_gap_ms": args.user_gap_ms,
        "partitions": args.partitions,
        "turns_per_s": round(args.turns / seconds, 1),
        "seconds": round(seconds, 3),
        "publish_seconds": round(published_s, 3),
        "memory_events": int(memory_events),
        "memory_events_per_s": round(memory_events / seconds, 1),
        "sinks": sorted(k.removeprefix("applied_") for k in counts if k.startswith("applied_")),
        **cpu_budget(cpu_s, {k: v - stages_before.get(k, 0.0) for k, v in stages.items()}, args.turns),
        "cpu_us_per_turn_by_thread": threads,
        "broker_cpu_us_per_turn": round(broker_s / args.turns * 1e6, 1),
        "graph_server_cpu_us_per_turn": round(graph_s / args.turns * 1e6, 1),
        **gc_budget(
            cpu_s, {k.removeprefix("gc_"): counts[k] - baseline[k] for k in counts if k.startswith("gc_")}, args.turns
        ),
        **early_late(samples, started, len(warm), args.turns, applied),
        **cpu_by_fifth(rss, applied, args.turns),
        "worker_rss_mb": rss_by_fifth(rss, applied, rss_warm),
        "pacing": {
            "max_backlog": config.ingest_max_backlog,
            "backlog_peak": int(counts["backlog_peak"]),
            "paced_seconds": round(counts["paced_s"] - baseline["paced_s"], 1),
        },  # fmt: skip
        "offset_gaps_read_back": int(counts["gaps"] - baseline["gaps"]),
        "broker_records_per_turn": round(sum(records.values()) / args.turns, 2),
        "broker_records_per_turn_by_topic": {topic: round(n / args.turns, 2) for topic, n in records.items()},
        "view_snapshots": snapshots,
        "state_store": config.state_store,
        "view_store": config.view_store,
        "view_hot_turns": config.view_hot_turns,
        "state_disk_reads": disk_reads,
        **restarted,
    }


class Servers(NamedTuple):
    """The stand-in servers' process ids, whose CPU the bench reports beside the worker's."""

    broker: int
    graph: int


def _graph_upsert_us(host: str, port: int) -> dict[str, Any]:
    """`ingest_bounds.graph_upsert_us` on a graph of its own on the run's FalkorDB, dropped after."""
    from engram.benchmarks.ingest_bounds import graph_upsert_us
    from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor

    executor = FalkorExecutor(FalkorConfig(host=host, port=port, graph="engram-bench-upsert"))
    executor.setup()
    try:
        return graph_upsert_us(executor)
    finally:
        executor.delete_graph()
        executor.close()


def stage_cpu(worker: WorkerProcess) -> dict[str, float]:
    """``engram_stage_cpu_seconds_total`` per stage, as the worker's /metrics has it now."""
    return by_stage(worker.scrape() or "", "engram_stage_cpu_seconds_total")


def by_stage(text: str, metric: str) -> dict[str, float]:
    """A counter with a ``stage`` label, per stage, from /metrics ``text``."""
    found = re.findall(rf'^{metric}\{{stage="([^"]+)"\}} (\S+)$', text, re.M)
    return {stage: float(value) for stage, value in found}


def view_snapshots(text: str, cpu_s: float, turns: int) -> dict[str, float]:
    """The view's snapshots (sinks/viewstate.py): how many were written and the wall seconds they
    took (from /metrics ``text``), their forked writers' ``cpu_s`` per turn, the newest's size."""
    return {
        "written": metric_value(text, "engram_view_snapshots_total"),
        "wall_seconds": round(metric_value(text, "engram_view_snapshot_seconds_total"), 2),
        "cpu_us_per_turn": round(cpu_s / turns * 1e6, 1),
        "newest_mb": round(metric_value(text, "engram_view_snapshot_bytes") / 2**20, 1),
    }


def _applied(counts: dict[str, float]) -> float:
    """Memory events every sink applied."""
    return min((v for k, v in counts.items() if k.startswith("applied_")), default=0.0)


def wait(
    worker: WorkerProcess, turns: int, timeout_s: float, servers: Servers
) -> tuple[dict[str, float], list[Sample], list[WorkerSample]]:
    """Until the pipeline is done: its counts, and samples on the way (`WorkerSample`: the worker's
    memory, CPU and commit stages, and the servers' CPU, by memory events applied)."""
    deadline = time.monotonic() + timeout_s
    last = 0.0
    samples: list[Sample] = []
    rss: list[WorkerSample] = []
    backlog_peak = 0.0
    while True:
        text = worker.scrape() or ""  # once a sample: each scrape costs the worker CPU (SAMPLE_S)
        done, counts = pipeline_done(text, turns)
        samples.append((time.perf_counter(), counts["ingested"], _applied(counts)))
        gc_s = sum(v for k, v in counts.items() if k.startswith("gc_"))
        rss.append(WorkerSample(
            _applied(counts), worker.rss_bytes / 2**20, worker.anon_bytes / 2**20, worker.cpu_seconds, gc_s,
            process_cpu_seconds(servers.broker), time.perf_counter(), process_cpu_seconds(servers.graph),
            by_stage(text, "engram_commit_stage_seconds_total")))  # fmt: skip
        backlog_peak = max(backlog_peak, counts["backlog"])
        if done:
            return {**counts, "backlog_peak": backlog_peak}, samples, rss
        if time.monotonic() > deadline:
            msg = f"pipeline did not finish in {timeout_s:.0f}s: {counts}"
            raise TimeoutError(msg)
        if counts["ingested"] - last >= 2000:
            last = counts["ingested"]
            progress(f"ingested {int(last)} / {turns}")
        time.sleep(SAMPLE_S)
