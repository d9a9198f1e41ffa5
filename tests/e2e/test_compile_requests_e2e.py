"""Context requests through the broker, by the worker's one request path (streams/agents/requests.py):
requests sent before the worker started (a backlog) and while it runs are each answered exactly
once, a malformed one is dead-lettered, every request is in the event log, and a restarted worker
answers nothing twice (the reader committed its offsets only after delivery)."""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path

import pytest

from engram.benchmarks.compile import build_memory, make_requests, questions
from engram.benchmarks.ingest import texts
from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CompiledContext, DeadLetter
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.replies import request_contexts
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

USERS = 2


def answered(config: EngramConfig) -> Counter[str]:
    codec: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
    return Counter(
        codec.decode(m.value() or b"")["request_id"]
        for m in read_topic(config.bootstrap_servers, config.topics.compiled)
    )


def wait_applied(worker: WorkerProcess, expected: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    applied = 0.0
    while time.monotonic() < deadline:
        applied = metric_value(worker.scrape() or "", "engram_sink_applied_total", {"sink": "qdrant"})
        if applied >= expected:
            return
        time.sleep(0.2)
    msg = f"the worker applied {applied:.0f} of {expected} memory events in {timeout_s}s"
    raise AssertionError(msg)


def test_requests_are_answered_once_and_not_again_after_a_restart(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codecs = TopicCodecs.for_config(config)
    asked = questions(None)
    backlog = make_requests(6, USERS, asked, 0, 400)
    live = make_requests(30, USERS, asked, 6, 400)
    later = make_requests(2, USERS, asked, 36, 400)
    publisher = Publisher.for_config(config)
    for request in backlog:
        publisher.publish(config.topics.requests, request["user_id"].encode(), codecs.requests.encode(request))
    publisher.publish(config.topics.requests, b"bench-user-0", b"\x00 not a ContextRequest")
    memory = build_memory(120, USERS, texts(None))
    for key, value in memory.payloads:
        publisher.publish(config.topics.memory, key, value)
    assert publisher.flush() == len(backlog) + 1 + len(memory.payloads)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_applied(worker, len(memory.payloads), 60)
        got = request_contexts(config, live, timeout_s=30)
        assert set(got) == {r["request_id"] for r in live}, "every live request is answered"
        assert all(c["items"] for c in got.values()), "answers carry the user's memory"
        deadline = time.monotonic() + 20
        while not set(r["request_id"] for r in backlog) <= answered(config).keys() and time.monotonic() < deadline:
            time.sleep(0.5)
    first_life = answered(config)
    assert set(first_life) == {r["request_id"] for r in backlog + live}, "the backlog is answered too"
    assert max(first_life.values()) == 1, "no request is answered twice in one worker life"
    logged = list(eventlog_reader(config).read([config.topics.requests]))
    assert len(logged) == len({(e["partition"], e["offset"]) for e in logged}) == len(backlog) + 1 + len(live), (
        "every request is in the event log once, as received (the malformed one too)"
    )

    letters: list[DeadLetter] = [
        AvroCodec[DeadLetter]("DeadLetter").decode(m.value() or b"")
        for m in read_topic(config.bootstrap_servers, config.topics.deadletter)
    ]
    assert [(d["topic"], d["stage"]) for d in letters] == [(config.topics.requests, "compile")]

    with WorkerProcess(config, tmp_path / "worker-2.log", topic_prefix=unique_name):
        got = request_contexts(config, later, timeout_s=30)
        assert set(got) == {r["request_id"] for r in later}
    second_life = answered(config)
    assert second_life - first_life == Counter({r["request_id"]: 1 for r in later}), (
        "the restarted worker answers only the new requests"
    )
