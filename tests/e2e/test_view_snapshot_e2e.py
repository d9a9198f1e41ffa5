"""A worker killed after its view was snapshotted starts from the snapshot (sinks/viewstate.py,
streams/restore.py) and its tables from their stores on disk (streams/tablestore.py), and answers
the same questions with the same contexts, through the broker."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engram.benchmarks.ingest import make_turns, pipeline_done, texts
from engram.benchmarks.ingest_restart import restart
from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn
from engram.sinks.viewstate import FILE
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.repairs.ends import topic_ends
from engram.streams.restore import SNAPSHOT_FOLDER
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

TURNS = 400
# Before and after must compile alike whatever the machine's load: a compile cut short by the
# default 50 ms bound on a busy machine would compare a partial context with a whole one.
UNHURRIED_MS = 5000.0


def test_a_killed_worker_starts_from_its_snapshot_and_its_table_stores_and_answers_as_before(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config = standin_config(stack, tmp_path, unique_name, view_snapshot_events=300, dreaming=False,
                             compile_timeout_ms=UNHURRIED_MS)  # fmt: skip
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns = make_turns(TURNS, 4, texts(None))
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        publisher = Publisher.for_config(config)
        for turn in turns:
            publisher.publish(config.topics.turns, turn["user_id"].encode(), codec.encode(turn))
        publisher.flush()
        deadline = time.monotonic() + 120
        while not pipeline_done(worker.scrape() or "", TURNS)[0]:
            assert time.monotonic() < deadline, "the worker did not apply every turn's memory in 120 s"
            time.sleep(0.3)
        written = metric_value(worker.scrape() or "", "engram_view_snapshots_total")
        assert written >= 1, "a snapshot was taken once 300 memory events were applied"
        assert (config.data_dir / SNAPSHOT_FOLDER / FILE).exists()
        restarted = restart(worker, turns, tmp_path / "worker-restart.log")
    assert restarted["view_start_events"]["snapshot"] > 0, "the new worker loaded the snapshot"
    assert restarted["contexts_equal"] == restarted["questions"], restarted["contexts_differing"]
    # The killed worker had settled: each table's store holds its whole changelog, and recovery
    # re-reads at most the record at the offset it holds, per partition, not the history.
    changelog = sum(_changelog_records(config, table) for table in TABLES)
    assert changelog > 4 * len(TABLES) * config.partitions, changelog
    assert restarted["state_recovered_records"] <= len(TABLES) * config.partitions, (restarted, changelog)


TABLES = ("trace-state", "facts-state", "slb-state")


def _changelog_records(config: EngramConfig, table: str) -> int:
    return sum(topic_ends(config.bootstrap_servers, f"{config.app_id}-{table}-changelog").values())
