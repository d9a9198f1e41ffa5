"""`engram config [--metrics]`: the configuration reference (every ENGRAM_* variable, default,
meaning), or with ``--metrics`` the metrics reference (every metric the worker exposes)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("config", help="print the configuration reference (markdown)")
    parser.add_argument("--metrics", action="store_true", help="the metrics reference instead")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from engram.streams.config_docs import reference_markdown
    from engram.streams.metrics_docs import metrics_markdown

    print(metrics_markdown() if args.metrics else reference_markdown())
    return 0
