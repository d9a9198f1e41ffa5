"""A worker that cannot finish a batch exits without acknowledging it, and a restart loses nothing.

The event log is made unable to take the turns topic (a plain file where its folder would go), so
the archive agent fails on its first batch of turns. Faust would acknowledge that batch and commit
past it; the worker must instead exit (streams/repairs/unfinished.py), and once the log can take
the topic again a restarted worker archives every turn, each exactly once.

The restart has table state to recover, and its turns partitions were never committed: the case
in which a restarted worker used to sit "ready" at the end of its partitions and receive nothing
(about 1 run in 15; streams/repairs/recovery.py, "A restarted worker that received nothing"). One restart
must now archive every turn.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.streams.config import EngramConfig
from engram.streams.repairs.unfinished import EXIT_UNFINISHED_BATCH
from engram.streams.runner import WorkerProcess, log_tail
from tests.e2e.trace_support import drop_graphs, locomo_turns, logged, publish_turns, wait_until, worker_config

pytestmark = pytest.mark.e2e


def test_a_worker_that_cannot_archive_exits_and_its_restart_loses_nothing(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    turns = locomo_turns("26")[:60]
    config = worker_config(stack, tmp_path, unique_name, batch_max=20)
    blocker = config.eventlog_dir / config.topics.turns
    try:
        first = WorkerProcess(config, tmp_path / "worker-1.log", topic_prefix=unique_name).start()
        try:
            blocker.write_text("a file where the topic's folder goes: the event log cannot take it\n")
            assert publish_turns(config, turns) == len(turns)
            code = first.wait_exit(60.0)
        finally:
            first.stop()
        assert code == EXIT_UNFINISHED_BATCH, f"exit code {code}; log:\n{log_tail(tmp_path / 'worker-1.log')}"

        blocker.unlink()
        log = tmp_path / "worker-restart.log"
        with WorkerProcess(config, log, topic_prefix=unique_name):
            wait_until(
                "every turn in the event log after one restart",
                lambda: len(logged(config, config.topics.turns)) >= len(turns),
                60,
                partial(restart_state, config, log),
            )
        offsets = [(e["partition"], e["offset"]) for e in logged(config, config.topics.turns)]
        assert len(offsets) == len(set(offsets)) == len(turns), "each turn archived exactly once"
    finally:
        drop_graphs(stack, [config.graph_name])


def restart_state(config: EngramConfig, log: Path) -> object:
    return len(logged(config, config.topics.turns)), log_tail(log)
