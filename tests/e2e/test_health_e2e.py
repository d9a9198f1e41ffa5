"""Issue 18: `/health` and `/ready`, and metrics that move by what went in.

A worker is started; `/health` answers at once and `/ready` once it may be sent work. Then a known
input goes through the broker (three turns, one undecodable message, one context request) and the
scrape afterwards shows each stage's counters moved by the expected amounts, the lag and batch
gauges set, and every metric the dashboard queries present."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from engram.benchmarks.compile import make_requests, questions
from engram.infra.config import StackInfo
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.codecs import TopicCodecs
from engram.streams.replies import request_contexts
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import standin_config
from tests.e2e.test_facts_e2e import make_turn
from tests.infra.test_production_config import dashboard_metrics

pytestmark = pytest.mark.e2e


def wait_ready(worker: WorkerProcess) -> dict[str, bool]:
    deadline = time.monotonic() + 30
    ready = worker.page("/ready")
    while ready is None and time.monotonic() < deadline:  # 503 until recovery finished
        time.sleep(0.5)
        ready = worker.page("/ready")
    assert ready is not None, "the worker never became ready"
    answer: dict[str, bool] = json.loads(ready)
    return answer


def test_health_ready_and_metrics_that_move(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns_topic, memory = config.topics.turns, config.topics.memory
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        health = worker.page("/health")
        assert health is not None and json.loads(health) == {"live": True}
        assert wait_ready(worker) == {"ready": True, "broker": True, "stores": True, "tables_recovered": True}
        before = worker.scrape() or ""

        codecs = TopicCodecs.for_config(config)
        publisher = Publisher.for_config(config)
        for i, text in enumerate(["I moved to Berlin.", "I work at Acme.", "I have a cat named Tom."]):
            publisher.publish(turns_topic, b"ada", codecs.turns.encode(make_turn("ada", i, text)))
        publisher.publish(turns_topic, b"ada", b"\x00 not avro")
        assert publisher.flush() == 4
        deadline = time.monotonic() + 30
        while metric_value(worker.scrape() or "", "engram_sink_applied_total", {"sink": "qdrant"}) < 3:
            assert time.monotonic() < deadline, "the turns never reached the vector store"
            time.sleep(0.25)
        request = make_requests(1, 1, questions(None), 0, 400)[0]
        assert request_contexts(config, [request], 20.0), "the request was not answered"
        time.sleep(0.5)
        after = worker.scrape() or ""

    def moved(name: str, labels: dict[str, str] | None = None) -> float:
        return metric_value(after, name, labels) - metric_value(before, name, labels)

    assert moved("engram_ingest_messages_total", {"topic": turns_topic}) == 3
    assert moved("engram_deadletter_messages_total", {"topic": turns_topic}) == 1
    assert moved("engram_received_messages_total", {"topic": turns_topic}) == 4
    assert moved("engram_eventlog_records_total", {"topic": turns_topic}) == 3  # the accepted turns
    assert moved("engram_memory_events_total") >= 3  # at least an event node per turn
    assert moved("engram_sink_applied_total", {"sink": "qdrant"}) == moved("engram_received_messages_total",
                                                                         {"topic": memory})  # fmt: skip
    assert moved("engram_context_requests_total") == 1
    assert metric_value(after, "engram_worker_ready") == 1
    assert metric_value(after, "engram_agent_last_batch_size", {"agent": "engram.ingest.ConversationTurn"}) >= 1
    assert f'engram_consumer_lag{{partition="0",topic="{turns_topic}"}}' in after or (
        f'engram_consumer_lag{{partition="1",topic="{turns_topic}"}}' in after
    )
    for name in dashboard_metrics():
        assert name in after, f"the dashboard queries {name}, which the scrape does not carry"
