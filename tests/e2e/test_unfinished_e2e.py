"""A worker that cannot finish a batch exits without acknowledging it, and a restart loses nothing.

The event log is made unable to take the turns topic (a plain file where its folder would go), so
the archive agent fails on its first batch of turns. Faust would acknowledge that batch and commit
past it; the worker must instead exit (streams/agents/unfinished.py), and once the log can take
the topic again a restarted worker archives every turn, each exactly once.

After the restart one more turn is published. Faust's end of recovery can still drop records in
flight (streams/resume.py); the gap repair reads them back when a later record of the partition
arrives (streams/gaps.py), and cannot before. Without a later record, about one run in 20 here left
the restarted worker idle with the turns unarchived. The repair starts at the group's committed
offset, so had anything been committed past those turns they would stay missing and this fails.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from infra.config import StackInfo
from streams.agents.unfinished import EXIT_UNFINISHED_BATCH
from streams.runner import WorkerProcess, log_tail
from tests.e2e.trace_support import drop_graphs, locomo_turns, logged, publish_turns, wait_until, worker_config

pytestmark = pytest.mark.e2e


def test_a_worker_that_cannot_archive_exits_and_its_restart_loses_nothing(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    conversation = locomo_turns("26")
    turns, later = conversation[:60], conversation[60:61]  # one user: all on one partition
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
        second_log = tmp_path / "worker-2.log"
        with WorkerProcess(config, second_log, topic_prefix=unique_name):
            assert publish_turns(config, later) == len(later)
            wait_until(
                "every turn in the event log",
                lambda: len(logged(config, config.topics.turns)) >= len(turns) + len(later),
                60,
                lambda: (len(logged(config, config.topics.turns)), log_tail(second_log)),
            )
        offsets = [(e["partition"], e["offset"]) for e in logged(config, config.topics.turns)]
        assert len(offsets) == len(set(offsets)) == len(turns) + len(later), "each turn archived exactly once"
    finally:
        drop_graphs(stack, [config.graph_name])
