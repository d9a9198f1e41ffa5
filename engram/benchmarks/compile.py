"""Compile latency end to end: ContextRequest → CompiledContext through the real broker and a worker.

Starts the embedded stack once and runs the scenarios one after the other, each with a fresh worker
of its own (benchmarks/compile_scenario.py):

- ``many_users`` (today's scenario): ``--nodes`` event nodes spread over ``--users`` users, layer
  USER; each request asks for one user, who sees ``nodes / users`` of them.
- ``one_principal``: ``--nodes`` visible to ONE principal: 60 % its own USER-layer nodes and 40 %
  TEAM-layer nodes written by its teammates (60,000 + 40,000 by default), every request asked by
  that principal under ``[TEAM, USER]`` from ``--users`` sessions (benchmarks/compile_memory.py).

Each scenario's memory is built by publishing MemoryEvents straight to engram.memory (Trace-shaped
NodeUpserted with embeddings from the default embedder, plus NEXT edges within each session), with
the worker's facts step and dreaming on: they derive memory of their own from it. The bench waits
until the worker's view applied every offset it published and the worker drained what it derived
(benchmarks/compile_load.py), never on node counts. Building the same memory through ingest would
take minutes at the current ingest speed; the compile path only reads what the worker applied.

Then it sends ``--requests`` ContextRequests paced at ``--rate`` per second and times each from the
producer's send (monotonic clock) to the receipt of its CompiledContext (a consumer assigned at the
topic's end, reading in a background thread). p50/p99 are over every measured request; the warm-up
requests (one per asking session, sent first) are reported apart. The broker floor (the same trip
answered with no compile, benchmarks/compile_floor.py) is measured once per scenario, after its
measured requests; then rising rates find ``max_answered_per_s`` (benchmarks/compile_saturation.py);
last, the ``mixed`` step times requests while the same worker ingests turns and dreams
(benchmarks/compile_mixed.py).

The JSON keeps today's keys at the top level, for the first scenario run (``many_users`` unless
``--scenario one_principal``), and adds ``scenarios`` → each scenario's full result, with
``nodes_visible``, ``derived``, ``p50_ms``, ``p99_ms``, ``broker_floor_p50_ms``, ``max_answered_per_s``,
``mixed``, its ``goals`` and ``goals_met``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from engram.benchmarks.compile_memory import (
    Layout,
    build_memory,
    make_requests,
    many_users,
    memory_events,
    one_principal,
    questions,
    text_table,
)
from engram.benchmarks.compile_saturation import RATES
from engram.benchmarks.compile_scenario import progress, run_scenario
from engram.benchmarks.ingest import texts

# Names other modules import from here (tests/e2e/test_compile_requests_e2e.py, compile_inproc).
__all__ = ["add_arguments", "build_memory", "make_requests", "memory_events", "questions", "run"]

LAYOUTS: Final[dict[str, Callable[[argparse.Namespace], Layout]]] = {
    "many_users": lambda a: many_users(a.nodes, a.users),
    "one_principal": lambda a: one_principal(a.nodes, a.users),
}
BOTH: Final = "both"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scenario",
        choices=[*LAYOUTS, BOTH],
        default=BOTH,
        help="many_users, one_principal, or both, one after the other (default)",
    )
    parser.add_argument(
        "--nodes",
        type=int,
        default=100_000,
        help="event nodes in each scenario's memory; one_principal: 60%% the principal's own, 40%% TEAM nodes",
    )
    parser.add_argument(
        "--users",
        type=int,
        default=50,
        help="many_users: users the nodes are spread over; one_principal: sessions the principal asks from",
    )
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
        "--saturation-rates",
        type=rates,
        default=RATES,
        help="max_answered_per_s: rates offered in turn, comma-separated (default %(default)s)",
    )
    parser.add_argument(
        "--saturation-seconds", type=float, default=5.0, help="seconds of requests at each rate (0: no climb)"
    )
    parser.add_argument(
        "--floor-requests",
        type=int,
        default=500,
        help="requests answered with no compile at --rate, the broker's share, per scenario (0: none)",
    )
    parser.add_argument(
        "--mixed-turn-rate",
        type=float,
        default=100.0,
        help="mixed step, last in each scenario: --requests at --rate while the worker ingests this many "
        "turns a second, dreaming on (0: no mixed step)",
    )
    parser.add_argument(
        "--mixed-lead-s", type=float, default=2.0, help="mixed step: seconds of turns before the first request"
    )


def rates(text: str) -> tuple[float, ...]:
    """``"100,200,400"`` -> (100.0, 200.0, 400.0), rising."""
    values = tuple(float(part) for part in text.split(",") if part.strip())
    if not values or list(values) != sorted(values) or values[0] <= 0:
        msg = f"expected rising positive rates, e.g. 100,200,400; got {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return values


def run(args: argparse.Namespace) -> dict[str, Any]:
    from engram.infra.config import KAFKA, StackConfig
    from engram.infra.launcher import EmbeddedStack

    started = time.monotonic()
    names = list(LAYOUTS) if args.scenario == BOTH else [args.scenario]
    corpus, asked = texts(args.data), questions(args.data)
    progress(f"embedding the texts of {args.nodes} nodes; scenarios: {', '.join(names)}")
    table = text_table(corpus, args.nodes)
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory(prefix="engram-bench-compile-") as tmp:
        launcher = EmbeddedStack(StackConfig(root=Path(tmp) / "stack", falkordb=args.graph))
        with launcher as stack:
            broker = next((r.pid for r in launcher.records if r.name == KAFKA), None)
            for name in names:
                layout = LAYOUTS[name](args)
                results[name] = run_scenario(stack, Path(tmp) / name, args, layout, corpus, table, asked, broker)
    return {
        **results[names[0]],  # today's keys, for today's readers: the first scenario's
        "scenarios": results,
        "broker_floor_measured": "once per scenario, after its measured requests, on its own worker's stack",
        "seconds": round(time.monotonic() - started, 2),
    }
