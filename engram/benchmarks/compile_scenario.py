"""One scenario of ``engram bench compile``: its memory loaded into a fresh worker, its requests timed.

Each scenario gets a worker of its own on the run's one embedded stack, with its own topic prefix
(``bench-compile-<name>``), app id, data folder (event log, Faust tables, Qdrant) and FalkorDB graph,
so nothing one scenario loaded reaches the other. Its memory is published straight to its
engram.memory, and the scenario waits on what it can know (benchmarks/compile_load.py): the view
applied every offset it published that each principal may see (and then holds at least the nodes
built for it), and the worker drained what it derived from that memory (facts, dreams), so nothing
the load left in flight competes with the first timed requests (``load_phases_seconds``).
``nodes_visible`` is read from the view once drained, derived nodes included; ``derived`` says
what the worker derived.

Then, in order: one warm-up request per asking session, ``--probe-requests`` at ``--probe-rate``,
``--requests`` at ``--rate`` (the measured ones), the broker floor, measured once per scenario
with the scenario's own typical compiled context as the reply (benchmarks/compile_floor.py), the
climb to ``max_answered_per_s`` (benchmarks/compile_saturation.py), and last the ``mixed`` step:
requests while the worker ingests its principals' turns and dreams (benchmarks/compile_mixed.py).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Final

from engram.benchmarks.broker_records import records_held
from engram.benchmarks.compile_floor import floor_summary, measure_floor, typical
from engram.benchmarks.compile_load import drained, held_visible, publish, view_applied, view_page
from engram.benchmarks.compile_measure import Measured, measure, percentile
from engram.benchmarks.compile_memory import Layout, Memory, TextTable, encode_memory, layout_events, layout_requests
from engram.benchmarks.compile_mixed import FIRST_REQUEST, mixed_start_ms, mixed_turns, run_mixed
from engram.benchmarks.compile_saturation import CpuClock, saturate
from engram.processors.rebac import USER_LAYER
from engram.schemas.records import CompiledContext, ContextRequest
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess, metric_value, process_cpu_seconds

PATH: Final = "produce ContextRequest -> broker -> worker engram.compile -> engram.context.compiled -> consumer"


@dataclass(frozen=True, slots=True)
class Goals:
    """Latency goals in ms: p50 under an absolute bound or under the broker floor plus a margin."""

    p99_ms: float
    rule: str
    p50_ms: float | None = None
    p50_over_floor_ms: float | None = None

    def check(self, p50: float, p99: float, floor_p50: float | None) -> dict[str, Any]:
        """The bounds, each goal's verdict and the overall one (None when the floor the p50 goal
        depends on was not measured)."""
        limit = self.p50_ms
        if self.p50_over_floor_ms is not None:
            limit = None if floor_p50 is None else round(floor_p50 + self.p50_over_floor_ms, 3)
        checks = {"p50_ms": None if limit is None else p50 <= limit, "p99_ms": p99 <= self.p99_ms}
        met = None if checks["p50_ms"] is None else bool(checks["p50_ms"] and checks["p99_ms"])
        return {
            "goals": {"p50_ms": limit, "p99_ms": self.p99_ms},
            "goals_rule": self.rule,
            "goal_checks": checks,
            "goals_met": met,
        }


GOALS: Final = {
    "many_users": Goals(p99_ms=50.0, rule="p50_ms <= 10 and p99_ms <= 50", p50_ms=10.0),
    "one_principal": Goals(
        p99_ms=50.0, rule="p50_ms <= broker_floor_p50_ms + 4 and p99_ms <= 50 (issue 14)", p50_over_floor_ms=4.0
    ),
}


def progress(line: str) -> None:
    print(f"[bench compile] {line}", file=sys.stderr, flush=True)


def scenario_progress(name: str, line: str) -> None:
    progress(f"{name}: {line}")


@contextlib.contextmanager
def frozen_heap() -> Iterator[None]:
    """The memory's payloads stay alive to the end; out of this process's full GC passes, they
    cannot stall the reader thread that timestamps the replies (streams/heap.py: measured cost)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def worker_config(stack: Any, root: Path, args: argparse.Namespace, name: str) -> EngramConfig:
    falkordb = stack.require_falkordb() if args.graph else (None, None)
    return EngramConfig(
        bootstrap_servers=stack.require_bootstrap_servers(),
        falkordb_host=falkordb[0],
        falkordb_port=falkordb[1],
        graph_name=f"bench-compile-{name}",
        app_id=f"engram-bench-compile-{name}",
        topics=EngramConfig().topics.prefixed(topic_prefix(name)),
        partitions=args.partitions,
        data_dir=root / "data",
        web_port=free_port(),
        broker_profile="standin",
    )


def topic_prefix(name: str) -> str:
    return f"bench-compile-{name}"


def derived(worker: WorkerProcess, memory: Memory, page: Mapping[str, Any]) -> dict[str, Any]:
    """What the worker derived from the loaded memory, once drained: nodes its view holds beyond
    those the bench built, and its counters of derived events, fact decisions, dreams and dormancy."""
    exposition = worker.scrape() or ""

    def total(name: str) -> int:
        return int(metric_value(exposition, name))

    return {
        "nodes_in_view": int(page.get("nodes", 0)) - memory.nodes,
        "memory_events": total("engram_memory_events_total"),
        "fact_decisions": total("engram_facts_decisions_total"),
        "dreams": total("engram_dreams_total"),
        "dream_nodes": total("engram_dream_nodes_total"),
        "dormant_nodes": total("engram_dormant_nodes_total"),
    }


@dataclass(frozen=True, slots=True)
class Timed:
    """What one scenario measured."""

    memory: Memory
    nodes_visible: int  # the most nodes any principal may see in the view, once drained
    derived: dict[str, Any]  # what the worker derived from the memory (`derived`)
    load_s: float
    phases_s: dict[str, float]  # published; the view applied it; the worker drained what it derived
    cold: Measured
    low: Measured
    hot: Measured
    floor: Measured | None
    load_avg: tuple[float, float]
    saturation: dict[str, Any] | None  # benchmarks/compile_saturation.py
    mixed: dict[str, Any] | None  # benchmarks/compile_mixed.py


def request_batches(layout: Layout, args: argparse.Namespace, asked: list[str]) -> list[list[ContextRequest]]:
    """The warm-up (one per asking session), measured, probe and floor requests, numbered on."""
    sizes = (len(layout.askers), args.requests, args.probe_requests, args.floor_requests)
    batches, start = [], 0
    for size in sizes:
        batches.append(layout_requests(layout, size, asked, start, args.budget))
        start += size
    return batches


def saturation(
    config: EngramConfig, layout: Layout, args: argparse.Namespace, asked: list[str], cpu: CpuClock
) -> dict[str, Any] | None:
    """The climb to ``max_answered_per_s`` (benchmarks/compile_saturation.py), after every other
    measurement, with requests numbered after theirs; None with ``--saturation-seconds 0``."""
    if args.saturation_seconds <= 0:
        return None
    start = len(layout.askers) + args.requests + args.probe_requests + args.floor_requests
    progress(f"{layout.name}: offering rising rates {args.saturation_rates} for {args.saturation_seconds:g}s each")
    return saturate(
        config,
        lambda count, first: layout_requests(layout, count, asked, first, args.budget),
        start,
        args.saturation_rates,
        args.saturation_seconds,
        cpu,
        partial(records_held, config.bootstrap_servers, layout.name),
    )


def mixed(
    config: EngramConfig, worker: WorkerProcess, layout: Layout, args: argparse.Namespace, corpus: list[str],
    asked: list[str],
) -> dict[str, Any] | None:  # fmt: skip
    """The mixed step (benchmarks/compile_mixed.py); None with ``--mixed-turn-rate 0``."""
    if args.mixed_turn_rate <= 0 or args.requests <= 0:
        return None
    seconds = args.mixed_lead_s + args.requests / args.rate + 1.0
    turns = mixed_turns(layout.principals(), round(seconds * args.mixed_turn_rate), corpus,
                        mixed_start_ms(len(layout.owners)))  # fmt: skip
    progress(f"{layout.name}: mixed, {args.requests} requests at {args.rate:g}/s while {len(turns)} turns come at "
             f"{args.mixed_turn_rate:g}/s")  # fmt: skip
    requests = layout_requests(layout, args.requests, asked, FIRST_REQUEST, args.budget)
    return run_mixed(config, worker, requests, args.rate, turns, args.mixed_turn_rate, args.mixed_lead_s)


def cpu_clock(worker: WorkerProcess, broker: int | None) -> CpuClock:
    """The CPU seconds so far of the worker, the broker (its process id, when known) and this
    process (the bench's requests and reader)."""

    def clock() -> dict[str, float]:
        found = {"worker": worker.cpu_seconds, "bench": time.process_time()}
        return found | ({"broker": process_cpu_seconds(broker)} if broker is not None else {})

    return clock


def run_scenario(
    stack: Any,
    root: Path,
    args: argparse.Namespace,
    layout: Layout,
    corpus: list[str],
    table: TextTable,
    asked: list[str],
    broker_pid: int | None = None,
) -> dict[str, Any]:
    """Load ``layout``'s memory into a fresh worker and time its requests (module docstring)."""
    started = time.monotonic()
    progress(f"{layout.name}: building {len(layout.owners)} event nodes")
    memory = encode_memory(layout_events(layout, corpus, table))
    warm, measured, probe, echoed = request_batches(layout, args, asked)
    config = worker_config(stack, root, args, layout.name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    with frozen_heap(), WorkerProcess(config, root / "worker.log", topic_prefix=topic_prefix(layout.name)) as worker:
        progress(f"{layout.name}: publishing {len(memory.payloads)} MemoryEvents to {config.topics.memory}")
        load_started = time.monotonic()
        published = publish(config, memory)
        published_s = time.monotonic() - load_started
        note = partial(scenario_progress, layout.name)
        view_applied(worker, layout, published, args.timeout, note)
        load_s = time.monotonic() - load_started
        note(f"memory applied in {load_s:.1f}s; waiting for what the worker derives from it")
        drained_s = drained(worker, config, args.timeout, note)
        page = view_page(worker)
        visible = max(held_visible(page, layout).values(), default=0)
        made = derived(worker, memory, page)
        note(f"drained in {drained_s:.1f}s, derived {made}; {len(warm)} warm-up then {len(measured)} requests")
        load_before = os.getloadavg()[0]
        cold, low, hot = measure(config, [(warm, args.rate), (probe, args.probe_rate), (measured, args.rate)])
        load_after = os.getloadavg()[0]
        floor = measure_floor(config, typical(hot.compiled), echoed, args.rate) if echoed and hot.compiled else None
        climb = saturation(config, layout, args, asked, cpu_clock(worker, broker_pid))
        ingesting = mixed(config, worker, layout, args, corpus, asked)
    seconds = {"published": published_s, "applied": load_s - published_s, "drained": drained_s}
    timed = Timed(memory, visible, made, load_s, seconds, cold, low, hot, floor, (load_before, load_after), climb,
                  ingesting)  # fmt: skip
    result = summarize(layout, args, timed)
    result["seconds"] = round(time.monotonic() - started, 2)
    return result


def summarize(layout: Layout, args: argparse.Namespace, t: Timed) -> dict[str, Any]:
    result = t.hot.summary()
    floor = floor_summary(t.floor, args.rate)
    floor_p50 = floor["p50_ms"] if floor else None
    result.update(
        {
            "scenario": layout.name,
            "nodes": t.memory.nodes,
            "edges": t.memory.edges,
            "nodes_visible": t.nodes_visible,
            "nodes_built_visible": max(layout.visible_counts().values(), default=0),
            "derived": t.derived,
            "dreaming": "on",
            "facts": "on (patterns)",
            "shared_nodes": sum(1 for a in layout.owners if a.layer != USER_LAYER),
            "users": len(layout.principals()),
            "authors": len({a.user_id for a in layout.owners}),
            "sessions": len(layout.askers),
            "authorized_layers": list(layout.layers),
            "items_by_layer": items_by_layer(t.hot.compiled),
            "requests": args.requests,
            "rate": args.rate,
            "budget": args.budget,
            "warmup_requests": len(t.cold.latencies_ms) + t.cold.missing,
            "warmup_p50_ms": percentile(t.cold.latencies_ms, 50),
            "warmup_p99_ms": percentile(t.cold.latencies_ms, 99),
            "probe": t.low.probe_summary(args.probe_rate),
            "broker_floor": floor,
            "broker_floor_p50_ms": floor_p50,
            "broker_floor_p99_ms": floor["p99_ms"] if floor else None,
            "max_answered_per_s": t.saturation["max_answered_per_s"] if t.saturation else None,
            "max_answered_p99_ms": t.saturation["p99_ms_at_max"] if t.saturation else None,
            "max_kept_up_per_s": t.saturation["max_kept_up_per_s"] if t.saturation else None,
            "cpu_bound_per_s": t.saturation["cpu_bound_per_s"] if t.saturation else None,
            "saturation": t.saturation,
            "mixed": t.mixed,
            "machine": {
                "cpus": os.cpu_count(),
                "load_avg_1m": [round(t.load_avg[0], 2), round(t.load_avg[1], 2)],
                "note": "load average before and after the measured requests; the worker shares these CPUs",
            },
            "memory": "published as MemoryEvents",
            "memory_texts": "LoCoMo turns" if args.data else "generated sentences, 1 in 10 a first-person statement",
            "sinks": ["qdrant", "graph", "view"] if args.graph else ["qdrant", "view"],
            "graph_sink": "on (FalkorDB)" if args.graph else "off: falkordb_host unset; qdrant + in-process view",
            "load_seconds": round(t.load_s, 2),
            "load_phases_seconds": {k: round(v, 2) for k, v in t.phases_s.items()},
            "topic_prefix": topic_prefix(layout.name),
            "path": PATH,
            **GOALS[layout.name].check(result["p50_ms"], result["p99_ms"], floor_p50),
        }
    )
    result["bound"] = bound(result)
    return result


def items_by_layer(compiled: Sequence[CompiledContext]) -> dict[str, float]:
    """The share of the measured contexts' items from each layer: shared memory that is really
    visible to the principal shows up here."""
    layers = Counter(item["layer"] for c in compiled for item in c["items"])
    total = sum(layers.values())
    return {layer: round(n / total, 3) for layer, n in sorted(layers.items())} if total else {}


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
