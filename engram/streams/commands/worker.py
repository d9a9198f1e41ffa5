"""`engram worker`: run one Faust worker of the pipeline in the foreground, configured by the ENGRAM_*
environment over the stack `engram up` left running (streams/local.py): with that stack running, a
plain `engram worker` uses its broker and FalkorDB."""

from __future__ import annotations

import argparse
import os
from typing import Any

from engram.streams.local import add_broker_flag, command_config


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "worker", help="run a pipeline worker (ENGRAM_* environment variables, over the stack `engram up` started)"
    )
    parser.add_argument("--loglevel", default="warning", help="Faust/mode log level")
    add_broker_flag(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import sys

    import faust

    from engram.streams.admin import ensure_topics
    from engram.streams.app import create_app

    config = command_config(os.environ, args)
    sys.setswitchinterval(config.gil_switch_interval_s)
    # The view's follower reads every partition of the replica topic from the start, so it must
    # exist with the worker's partition count before the first worker produces to it; so must the
    # relationships topic, compacted (its last change per tuple is the tuple's state).
    names = config.topics
    ensure_topics(config.bootstrap_servers, [names.shared, *names.compacted], config.partitions,
                  compacted=names.compacted)  # fmt: skip
    engram = create_app(config)
    worker = faust.Worker(engram.app, loglevel=args.loglevel, redirect_stdouts=False)
    # Exits the process. Event-log batches are fsynced with their checkpoint before offsets commit,
    # so nothing needs closing for durability when the worker stops.
    worker.execute_from_commandline()
