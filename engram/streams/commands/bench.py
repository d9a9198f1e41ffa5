"""`engram bench NAME [--json]`: one JSON object of measurements per run.

Each benchmark is a module ``benchmarks.<name>`` exposing
``add_arguments(parser)`` and ``run(args) -> dict[str, object]``. Baselines are measured in the
same run and reported as ratios (ARCHITECTURE.md, "Contracts").
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Final

from engram.streams.cli import optional_module

BENCHES: Final[tuple[str, ...]] = (
    "eventlog",
    "ingest",
    "facts",
    "code",
    "locomo",
    "longmemeval",
    "slb",
    "compile",
    "dream",
    "history",
    "ram",
    "graph",
    "replay",
    "fuzz",
    "chaos",
    "trust",
    "scaleout",
    "client",
)


def register(sub: Any, selected: str | None = None) -> None:
    """Add `bench` and its benchmarks; only ``selected`` is imported when it names one."""
    parser = sub.add_parser("bench", help="run a benchmark and print its measurements")
    benches = parser.add_subparsers(dest="bench", required=True, metavar="NAME")
    for name in [selected] if selected in BENCHES else BENCHES:
        module = optional_module(f"engram.benchmarks.{name}")
        if module is None:
            continue
        bench_parser = benches.add_parser(name, help=(module.__doc__ or name).strip().splitlines()[0])
        bench_parser.add_argument("--json", action="store_true", help="print one JSON object only")
        module.add_arguments(bench_parser)
        bench_parser.set_defaults(func=_runner(module))


def _runner(module: Any) -> Any:
    def run(args: argparse.Namespace) -> int:
        result = module.run(args)
        if args.json:
            print(json.dumps(result, sort_keys=True))
        else:
            width = max((len(k) for k in result), default=0)
            for key, value in result.items():
                print(f"{key:<{width}}  {value}", file=sys.stdout)
        return 0

    return run
