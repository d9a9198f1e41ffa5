"""`engram up | status | down`: the embedded stand-ins, detached from the shell that started them.

``up`` starts the stack through `infra.launcher.EmbeddedStack` and leaves the servers running
(each in its own session) with their PIDs in ``<root>/stack.json``; ``status`` checks that each
recorded process still runs and answers; ``down`` stops only the recorded processes.

What the stack held outlives ``down``/``up`` (``StackConfig.keep``): ``down`` saves the broker's
topics and group offsets to ``<root>/broker`` before stopping it, ``up`` puts them back, and
FalkorDB keeps its graphs in ``<root>/falkordb/kept-graph.rdb``. ``up --no-keep`` starts a stack
that starts empty and keeps nothing (what was kept stays for the next plain ``up``); ``down
--no-save`` stops one without saving.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from engram.infra.config import StackConfig, StackInfo
from engram.infra.control import StackStatus, stack_status, stop_recorded
from engram.infra.errors import StandInError
from engram.infra.launcher import EmbeddedStack

DEFAULT_ROOT = Path(".engram")
T = TypeVar("T")


def register(sub: Any) -> None:
    up = sub.add_parser("up", help="start the embedded stand-ins and leave them running")
    _add_common(up)
    up.add_argument("--bolt", action="store_true", help="also serve FalkorDB's Bolt port (Neo4j adapter smoke tests)")
    up.add_argument("--no-kafka", action="store_true", help="do not start the Kafka-protocol broker")
    up.add_argument("--no-falkordb", action="store_true", help="do not start FalkorDB")
    up.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for each server (default 30)")
    up.add_argument(
        "--no-keep",
        action="store_true",
        help="start the broker and graph empty and keep nothing (what was kept waits for the next up)",
    )
    up.set_defaults(func=run_up)

    status = sub.add_parser("status", help="check the stand-ins recorded by `engram up`")
    _add_common(status)
    status.set_defaults(func=run_status)

    down = sub.add_parser("down", help="stop the stand-ins recorded by `engram up` (and nothing else)")
    _add_common(down)
    down.add_argument("--no-save", action="store_true", help="do not save the broker's contents for the next `up`")
    down.set_defaults(func=run_down)


def _add_common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--root", type=Path, default=DEFAULT_ROOT, help="state and data folder (default .engram)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def run_up(args: argparse.Namespace) -> int:
    config = StackConfig(
        root=args.root,
        kafka=not args.no_kafka,
        falkordb=not args.no_falkordb,
        bolt=args.bolt and not args.no_falkordb,
        start_timeout_s=args.timeout,
        keep=not args.no_keep,
    )
    stack = EmbeddedStack(config)
    try:
        stack.start()
    except StandInError as exc:
        print(f"engram up: {exc}", file=sys.stderr)
        return 1
    records = stack.records
    restored = stack.restored
    if stack.unclean_stop and config.keep:
        saved = "" if restored is None else f"; the broker is as `engram down` saved it at {restored.saved_at}"
        print(
            f"engram up: the last stack under {config.root} was not stopped with `engram down`{saved}", file=sys.stderr
        )
    if restored is not None and restored.moved:
        moved = ", ".join(restored.moved[:5])
        print(f"engram up: records in {moved} did not get their saved offsets back", file=sys.stderr)
    info = stack.detach()
    if args.json:
        print(
            json.dumps({**info.to_json(), "restored": None if restored is None else restored.to_json()}, sort_keys=True)
        )
        return 0
    if restored is not None:
        print(f"restored {restored.records} records in {restored.topics} topics and {restored.groups} groups' "
              f"offsets, saved at {restored.saved_at} ({restored.seconds:.1f} s)")  # fmt: skip
    print(f"stand-ins running under {info.root} (stop them with `engram down`):")
    for record in records:
        ports = ", ".join(map(str, record.ports))
        print(f"  {record.name:<9} pid {record.pid:<8} port {ports:<13} log {record.log_path}")
    _print_info(info)
    return 0


def _read_state(command: str, read: Callable[[Path], T], root: Path) -> T | None:
    """``read(root)``, or None after printing why on stderr (a `StandInError`: the command exits 1)."""
    try:
        return read(root)
    except StandInError as exc:
        print(f"engram {command}: {exc}", file=sys.stderr)
        return None


def run_status(args: argparse.Namespace) -> int:
    status = _read_state("status", stack_status, args.root)
    if status is None:
        return 1
    if args.json:
        print(json.dumps(status.to_json(), sort_keys=True))
    else:
        _print_status(status)
    return 0 if status.healthy else 1


def run_down(args: argparse.Namespace) -> int:
    report = _read_state("down", partial(stop_recorded, save=not args.no_save), args.root)
    if report is None:
        return 1
    saved = report.saved
    if saved is not None and saved.connected_groups:
        groups = ", ".join(saved.connected_groups[:5])
        print(f"engram down: still connected when the broker was saved (stop workers first): {groups}", file=sys.stderr)
    if args.json:
        payload = {"stopped": list(report.stopped), "not_running": list(report.not_running),
                   "saved": None if saved is None else saved.to_json()}  # fmt: skip
        print(json.dumps(payload, sort_keys=True))
    elif not report.had_state:
        print(f"no stand-ins recorded under {args.root.resolve()}")
    else:
        if saved is not None:
            print(f"saved {saved.records} records in {saved.topics} topics and {saved.groups} groups' offsets "
                  f"to {saved.folder} ({saved.bytes / 1e6:.1f} MB, {saved.seconds:.1f} s)")  # fmt: skip
        print(f"stopped: {', '.join(report.stopped) or 'none'}")
        if report.not_running:
            print(f"already gone (left alone): {', '.join(report.not_running)}")
    return 0


def _print_info(info: StackInfo) -> None:
    if info.bootstrap_servers is not None:
        print(f"  bootstrap servers  {info.bootstrap_servers}")
    if info.falkordb_port is not None:
        print(f"  falkordb           {info.falkordb_host}:{info.falkordb_port}")
    if info.bolt_url is not None:
        print(f"  bolt               {info.bolt_url}")
    if info.qdrant_path is not None:
        print(f"  qdrant folders     {info.qdrant_path}")


def _print_status(status: StackStatus) -> None:
    if status.info is None:
        print(f"no stand-ins recorded under {status.root}")
        return
    print(f"stand-ins under {status.root} (started {status.started_at}):")
    for server in status.servers:
        state = "ready" if server.ready else ("running, not answering" if server.running else "not running")
        detail = "" if server.reason is None else f"  ({server.reason})"
        print(f"  {server.name:<9} pid {server.pid:<8} {state}{detail}")
    _print_info(status.info)
