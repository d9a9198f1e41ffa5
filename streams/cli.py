"""The `engram` command line. Each command lives in its own module under `streams/commands/` and
exposes `register(subparsers)`, which adds its parser and sets `func` to a handler returning the
exit code. Nothing is configured at import: handlers build their config objects from arguments
and the environment when they run.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence
from typing import Final

# Module names under streams.commands; each registers one or more subcommands.
COMMAND_MODULES: Final[tuple[str, ...]] = (
    "stack",  # up, status, down
    "worker",  # worker
    "replay",  # replay
    "demo",  # demo
    "bench",  # bench NAME
    "trace",  # trace back|why|concept
    "ask",  # ask
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engram", description="Event-sourced streaming memory for LLM agents")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"streams.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"streams.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    code = args.func(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
