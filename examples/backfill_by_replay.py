"""Backfill a fresh topic set from a worker's event log with `engram replay`.

A worker archives every record it consumes in its event log (``$ENGRAM_DATA_DIR/eventlog``). To
start a new deployment (new topics, a new worker with empty state, say after a change to how
memory is derived), replay the logged turns into the new topic set and start a worker on it; it
rebuilds its memory from the same turns, in the same order::

    .venv/bin/python examples/backfill_by_replay.py NEW_PREFIX
    ENGRAM_TOPIC_PREFIX=NEW_PREFIX ENGRAM_APP_ID=engram-NEW_PREFIX ENGRAM_DATA_DIR=.engram-NEW_PREFIX engram worker

The source worker's settings come from its ENGRAM_* variables (ENGRAM_DATA_DIR, ENGRAM_TOPIC_PREFIX,
ENGRAM_BOOTSTRAP_SERVERS), else the stack `engram up` recorded in ``.engram/stack.json``. The new
turns topic is created (with the source's partition count, so each record keeps its partition),
then `engram replay` copies the log's records in log order and prints its summary as JSON.
Options: ``--topics`` other archived topics than the turns, ``--since``/``--until`` a time window.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys

from engram.streams.admin import ensure_topics
from engram.streams.cli import main as engram
from engram.streams.config import EngramConfig
from engram.streams.local import local_config


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("prefix", help="topic prefix of the new topic set (e.g. backfill-2026-01)")
    parser.add_argument("--topics", nargs="+", default=None, help="archived topics to replay (default: the turns)")
    parser.add_argument("--since", default=None, help="first event time, ISO 8601 or epoch ms (UTC)")
    parser.add_argument("--until", default=None, help="end event time, ISO 8601 or epoch ms (UTC, exclusive)")
    args = parser.parse_args()

    source = local_config(os.environ)
    target = EngramConfig().topics.prefixed(args.prefix).turns
    if target == source.topics.turns:
        print("backfill: the new prefix names the source's own topics", file=sys.stderr)
        return 2
    ensure_topics(source.bootstrap_servers, [target], source.partitions)
    command = ["replay", "--log", str(source.eventlog_dir), "--keys", str(source.keys_dir),
               "--topics", *(args.topics or [source.topics.turns]), "--to", target,
               "--bootstrap", source.bootstrap_servers, "--json"]  # fmt: skip
    for flag, value in (("--since", args.since), ("--until", args.until)):
        if value is not None:
            command += [flag, value]
    print("engram " + shlex.join(command), file=sys.stderr)
    return engram(command)


if __name__ == "__main__":
    sys.exit(main())
