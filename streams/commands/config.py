"""`engram config`: the configuration reference (every ENGRAM_* variable, default, meaning)."""

from __future__ import annotations

import argparse
from typing import Any


def register(sub: Any) -> None:
    parser = sub.add_parser("config", help="print the configuration reference (markdown)")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from streams.config_docs import reference_markdown

    print(reference_markdown())
    return 0
