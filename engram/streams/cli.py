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
from types import ModuleType
from typing import Final

# Module names under streams.commands; each registers one or more subcommands.
COMMAND_MODULES: Final[tuple[str, ...]] = (
    "stack",  # up, status, down
    "worker",  # worker
    "replay",  # replay
    "demo",  # demo
    "bench",  # bench NAME
    "trace",  # trace back|why|concept
    "toc",  # toc (the time hierarchy)
    "ask",  # ask
    "query",  # query (the graph engine)
    "trust",  # token, relate, forget
    "config",  # config (the reference)
    "publish",  # publish turns, import locomo
    "policy",  # policy add
    "deadletters",  # deadletters
    "mcp",  # mcp (the MCP server, engram/mcp_server/)
)


# Which module defines each command, so a run imports only what it needs (a worker does not pay
# for, or depend on, every benchmark's imports).
COMMAND_OWNERS: Final[dict[str, str]] = {
    "up": "stack", "status": "stack", "down": "stack", "token": "trust", "relate": "trust", "forget": "trust",
    "import": "publish",
}  # fmt: skip


def optional_module(name: str) -> ModuleType | None:
    """Import ``name``; None when that module itself is not there (a command or benchmark left out of
    this tree). A module that is there but fails to import still raises."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        return None


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="engram", description="Event-sourced streaming memory for LLM agents")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    first = argv[0] if argv else ""
    owner = COMMAND_OWNERS.get(first, first)
    for name in [owner] if owner in COMMAND_MODULES else COMMAND_MODULES:
        module = optional_module(f"engram.streams.commands.{name}")
        if module is None:
            continue
        if name == "bench":
            module.register(sub, selected=argv[1] if len(argv) > 1 else None)
        else:
            module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(arguments)
    args = parser.parse_args(arguments)
    code = args.func(args)
    return int(code or 0)


if __name__ == "__main__":
    sys.exit(main())
