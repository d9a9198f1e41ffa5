"""Backpressure through the broker: while the memory agent is held (the graph store frozen), the
worker stops fetching turns once the backlog passes its bound, and takes the rest, with nothing
lost, once the store is back (streams/pacing.py)."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.codecs import TopicCodecs
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import standin_config
from tests.e2e.test_facts_e2e import make_turn
from tests.e2e.test_outage_e2e import falkordb_pid

pytestmark = pytest.mark.e2e

MAX_BACKLOG = 1  # one turn derives more (its event node and a temporal edge at least)


def wait_settled(worker: WorkerProcess) -> None:
    """Until everything the first turn derived is applied (the graph sink has every memory event
    the worker produced, and the backlog is within its bound): a turn derives several events, and
    a loaded machine may apply them over more than one batch."""
    deadline = time.monotonic() + 60
    while True:
        text = worker.scrape() or ""
        produced = metric_value(text, "engram_memory_events_total")
        applied = metric_value(text, "engram_sink_applied_total", {"sink": "graph"})
        if 0 < produced <= applied and metric_value(text, "engram_memory_backlog") <= MAX_BACKLOG:
            return
        assert worker.wait_exit(0.0) is None, "the worker exited waiting for the first turn's memory"
        assert time.monotonic() < deadline, f"the first turn's memory was not applied: {applied} of {produced}"
        time.sleep(0.2)


def wait_for(worker: WorkerProcess, what: str, done: float, name: str, labels: dict[str, str] | None = None) -> None:
    deadline = time.monotonic() + 60
    while metric_value(worker.scrape() or "", name, labels) < done:
        assert worker.wait_exit(0.0) is None, f"the worker exited waiting for {what}"
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.3)


def test_ingest_waits_for_a_held_memory_agent_and_loses_nothing(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    host, port = stack.require_falkordb()
    config = standin_config(stack, tmp_path, unique_name, falkordb_host=host, falkordb_port=port,
                            graph_name=f"pacing-{unique_name}", ingest_max_backlog=MAX_BACKLOG)  # fmt: skip
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)

    def publish(indexes: range) -> None:
        for i in indexes:
            turn = make_turn("ada", i, f"Note {i}: the ledger service moved to rack {i}.")
            publisher.publish(config.topics.turns, b"ada", codecs.turns.encode(turn))
        publisher.flush()

    pid = falkordb_pid(stack)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        publish(range(1))  # the memory agent applies a batch of ada's partition: its position is known
        wait_for(worker, "the first turn applied", 1, "engram_sink_applied_total", {"sink": "graph"})
        os.kill(pid, signal.SIGSTOP)
        try:
            publish(range(1, 2))  # taken in: the backlog was 0; what it derives stays unapplied
            wait_for(worker, "the second turn ingested", 2, "engram_ingest_messages_total")
            publish(range(2, 12))
            time.sleep(4.0)
            held = worker.scrape() or ""
            assert metric_value(held, "engram_ingest_messages_total") == 2, "ingest went on past the backlog"
            assert metric_value(held, "engram_memory_backlog") > MAX_BACKLOG
        finally:
            os.kill(pid, signal.SIGCONT)
        wait_for(worker, "the held turns ingested", 12, "engram_ingest_messages_total")
        wait_for(worker, "the pause counted", 3.0, "engram_ingest_paced_seconds_total")
        produced = metric_value(worker.scrape() or "", "engram_memory_events_total")
        wait_for(worker, "every memory event applied", produced, "engram_sink_applied_total", {"sink": "graph"})
        final = worker.scrape() or ""
    assert metric_value(final, "engram_sink_applied_total", {"sink": "qdrant"}) == produced
