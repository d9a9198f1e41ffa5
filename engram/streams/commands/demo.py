"""`engram demo [--json] [--root DIR]`: run the pipeline end to end on the embedded stand-ins."""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("demo", help="run the pipeline end to end on the embedded stand-ins")
    parser.add_argument("--json", action="store_true", help="print one JSON summary object on stdout")
    parser.add_argument("--root", type=Path, default=Path(".engram/demo"), help="where the demo keeps its data")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for each stage")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engram.streams.demo import print_report, run_demo

    def progress(line: str) -> None:
        print(f"[demo] {line}", file=sys.stderr, flush=True)

    root: Path = args.root
    if root.exists():
        shutil.rmtree(root)  # each demo run starts from empty stores
    report = run_demo(root, progress, args.timeout)
    if args.json:
        print(json.dumps(report.as_dict(), sort_keys=True))
    else:
        print_report(report)
    return 0
