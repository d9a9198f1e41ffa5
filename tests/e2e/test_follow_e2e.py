"""Two workers in one group: the worker answering a user sees the code graph of a repo whose
memory partition the OTHER worker owns, because its view follows that partition (streams/follow.py).

The user is picked so that its request (and memory) partition differs from the repo's memory
partition; the test checks that from the topics, so a different partitioner fails it, saying why.
Without the follower the answering worker's view holds none of the repo's nodes and the question
gets no code family.
"""

from __future__ import annotations

import zlib
from dataclasses import replace
from pathlib import Path

import pytest

from infra.config import StackInfo
from schemas.codec import AvroCodec
from schemas.records import CodeChange
from streams.admin import Publisher, ensure_topics, read_topic
from streams.config import EngramConfig
from streams.demo import free_port
from streams.runner import WorkerProcess, metric_value
from tests.code.support import BASE, CARD, CRYPTO, REPO
from tests.e2e.support import standin_config
from tests.e2e.test_code_e2e import ask, code_changes, code_nodes, holds
from tests.e2e.trace_support import topic_memory, wait_until

pytestmark = pytest.mark.e2e

PARTITIONS = 2
# librdkafka's default partitioner: CRC-32 of the key, modulo the partition count.
USER = next(u for u in (f"dev-{n}" for n in range(100)) if zlib.crc32(u.encode()) % 2 != zlib.crc32(REPO.encode()) % 2)


def uncaused_changes() -> list[CodeChange]:
    """The polymorphic fixture's changes, none caused by a turn: all its memory is keyed by the repo."""
    return [{**c, "causal_parent_ids": [], "user_id": None, "session_id": None} for c in code_changes()]


def followed_partitions(worker: WorkerProcess) -> float:
    return metric_value(worker.scrape() or "", "engram_view_followed_partitions")


def counts(workers: list[WorkerProcess], config: EngramConfig) -> list[dict[str, float]]:
    out = []
    for worker in workers:
        text = worker.scrape() or ""
        out.append(
            {
                "ingested": metric_value(text, "engram_ingest_messages_total", {"topic": config.topics.code}),
                "produced": metric_value(text, "engram_memory_events_total"),
                "applied": metric_value(text, "engram_sink_applied_total", {"sink": "qdrant"}),
                "followed": metric_value(text, "engram_view_followed_total"),
                "partitions": metric_value(text, "engram_view_followed_partitions"),
            }
        )
    return out


def test_a_worker_answers_with_code_memory_another_worker_owns(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    first = standin_config(stack, tmp_path / "a", unique_name, partitions=PARTITIONS)
    second = replace(first, data_dir=tmp_path / "b" / "data", web_port=free_port())
    ensure_topics(first.bootstrap_servers, first.topics.archived, PARTITIONS)
    changes = uncaused_changes()
    with (
        WorkerProcess(first, tmp_path / "a.log", topic_prefix=unique_name) as one,
        WorkerProcess(second, tmp_path / "b.log", topic_prefix=unique_name) as two,
    ):
        workers = [one, two]
        # After the rebalance each worker owns one memory partition and follows the other.
        wait_until(
            "the two workers to split the partitions",
            lambda: [followed_partitions(w) for w in workers] == [1, 1],
            45.0,
            lambda: counts(workers, first),
        )
        publisher = Publisher.for_config(first)
        code_codec: AvroCodec[CodeChange] = AvroCodec("CodeChange")
        for change in changes:
            publisher.publish(first.topics.code, REPO.encode(), code_codec.encode(change))
        assert publisher.flush() == len(changes)

        def stored() -> bool:
            c = counts(workers, first)
            produced = sum(w["produced"] for w in c)
            return sum(w["ingested"] for w in c) >= len(changes) and sum(w["applied"] for w in c) >= produced > 0

        wait_until("the changes ingested and stored", stored, 45.0, lambda: counts(workers, first))
        events = topic_memory(first)
        wait_until(
            "the other worker's view to follow the repo's memory",
            lambda: sorted(w["followed"] for w in counts(workers, first)) == [0, len(events)],
            30.0,
            lambda: counts(workers, first),
        )
        compiled = ask(first, USER, "why-authorize-followed")
        final = counts(workers, first)

    repo_partitions = {m.partition() for m in read_topic(first.bootstrap_servers, first.topics.memory)}
    request_partitions = {m.partition() for m in read_topic(first.bootstrap_servers, first.topics.requests)}
    assert len(repo_partitions) == 1 and len(request_partitions) == 1
    assert repo_partitions != request_partitions, "the user's requests share the repo's partition: pick another user"
    # One worker stored the repo's memory; the other applied all of it to its view by following.
    owner = [w for w in final if w["applied"] > 0]
    assert len(owner) == 1 and owner[0]["followed"] == 0, final
    follower = next(w for w in final if w is not owner[0])
    assert follower["applied"] == 0 and follower["followed"] == len(events), final

    nodes = code_nodes(events)
    items = [item for item in compiled["items"] if item["node_id"] in nodes]
    assert compiled["route"] == "CODE", compiled["route_reason"]
    for entity in (BASE, CARD, CRYPTO):
        assert any(holds(nodes[item["node_id"]], entity) for item in items), f"{entity} is not in the answer"
