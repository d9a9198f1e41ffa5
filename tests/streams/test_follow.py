"""The memory follower over a real broker: a view learns exactly the partitions its worker does
not own, from its watermarks on, and nothing twice when the store agent's path delivers too."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Coroutine, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import pytest
from confluent_kafka import Producer

from infra.config import StackInfo
from processors.compiler import BALANCED, ContextCompiler
from processors.embedding.static import StaticEmbedder
from processors.retrieval.applied import OffsetEvent
from processors.retrieval.view import MemoryView
from processors.slb import SLB_DEFAULT, LookasideTable
from processors.tokens import TokenCounter
from schemas.codec import AvroCodec
from schemas.events import memory_event, node_upserted
from schemas.records import NODE_UPSERTED, EventRef, MemoryEvent
from streams.admin import ensure_topics, read_topic
from streams.agents.compile import ContextService
from streams.follow import MemoryFollower, ViewCatchUp, register_follower
from streams.gaps import RangeReader
from streams.metrics import EngramMetrics
from streams.output import EventProducer
from streams.runner import metric_value

pytestmark = pytest.mark.integration

CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
PARTITIONS = 3
PER_PARTITION = 5
OWNED = 1  # the fake owner set: this "worker's" store agent holds partition 1


class TP(NamedTuple):
    topic: str
    partition: int


@dataclass
class Signal:
    receivers: list[Callable[..., Coroutine[Any, Any, None]]] = field(default_factory=list)

    def connect(self, receiver: Callable[..., Coroutine[Any, Any, None]]) -> None:
        self.receivers.append(receiver)


@dataclass
class FakeApp:
    """What register_follower uses of a Faust app: the assignment signal and app.task."""

    on_partitions_assigned: Signal = field(default_factory=Signal)
    tasks: list[Callable[[], Coroutine[Any, Any, None]]] = field(default_factory=list)

    def task(self, fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
        self.tasks.append(fn)


class WordCount:
    def count(self, text: str) -> int:
        return len(text.split())


def node_event(partition: int, index: int) -> MemoryEvent:
    node = node_upserted(
        f"n-{partition}-{index}", "event", "ORGANIZATION", 1_000 + index, text=f"note {index} of partition {partition}"
    )
    ref: EventRef = {"topic": "test", "partition": partition, "offset": index}
    return memory_event(f"key-{partition}", 1_000 + index, [ref], NODE_UPSERTED, node)


def produce(bootstrap: str, topic: str) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False})
    for partition in range(PARTITIONS):
        for index in range(PER_PARTITION):
            producer.produce(topic, CODEC.encode(node_event(partition, index)), b"k", partition=partition)
    assert producer.flush(20.0) == 0


def published(bootstrap: str, topic: str) -> list[OffsetEvent]:
    """Create the topic, produce every partition's nodes, and read them back as OffsetEvents."""
    ensure_topics(bootstrap, [topic], PARTITIONS)
    produce(bootstrap, topic)
    return [(m.partition() or 0, m.offset() or 0, CODEC.decode(m.value() or b"")) for m in read_topic(bootstrap, topic)]


@pytest.fixture
def services() -> Iterator[list[ContextService]]:
    """The services a test made, closed after it (each owns a compile thread)."""
    made: list[ContextService] = []
    yield made
    for service in made:
        service.close()


def context_service(bootstrap: str, topic: str, metrics: EngramMetrics, made: list[ContextService]) -> ContextService:
    embedder = StaticEmbedder()
    counter: TokenCounter = WordCount()
    view = MemoryView(embedder=embedder, token_counter=counter)
    slb = LookasideTable(SLB_DEFAULT)
    compiler = ContextCompiler(view, embedder, counter, BALANCED, slb=slb)
    producer = EventProducer(bootstrap)
    made.append(ContextService(view, compiler, slb, producer, "compiled", topic, "deadletter", metrics))
    return made[-1]


def followed(metrics: EngramMetrics) -> float:
    return metric_value(metrics.exposition().decode(), "engram_view_followed_total")


async def follow_until(app: FakeApp, metrics: EngramMetrics, topic: str, expected: int) -> None:
    task = asyncio.create_task(app.tasks[0]())
    held = [TP(topic, OWNED), TP("another-topic", 0)]
    for receiver in app.on_partitions_assigned.receivers:
        await receiver(app, held)
    deadline = time.monotonic() + 30.0
    while followed(metrics) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # anything more (a double application) would arrive now
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def test_follower_applies_the_partitions_not_owned_from_their_watermarks(
    stack: StackInfo, unique_name: str, services: list[ContextService]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.memory"
    records = published(bootstrap, topic)
    assert len(records) == PARTITIONS * PER_PARTITION
    metrics = EngramMetrics()
    service = context_service(bootstrap, topic, metrics, services)

    # The log held partition 2 up to offset 1; the store agent's path already applied 0..2 of partition 0.
    service.applied.fresh(2, 1)
    asyncio.run(service.observe([r for r in records if r[0] == 0 and r[1] <= 2]))
    assert len(service.view) == 3

    app = FakeApp()
    follower = MemoryFollower(bootstrap, topic, f"{unique_name}-follower", {"fetch.wait.max.ms": 100})
    register_follower(app, topic, PARTITIONS, follower, service.follow, service.applied.next_offset)
    # Partition 0 resumes at 3 (2 records), partition 2 after the seeded offset 1 (3 records).
    asyncio.run(follow_until(app, metrics, topic, expected=5))

    want = {f"n-0-{i}" for i in range(5)} | {f"n-2-{i}" for i in range(2, 5)}
    held = {node_id for node_id in (f"n-{p}-{i}" for p in range(3) for i in range(5)) if service.view.node(node_id)}
    assert held == want, "the followed partitions from their watermarks, nothing of the owned one"
    assert followed(metrics) == 5, "each followed offset applied once"
    assert service.applied.snapshot() == {0: 4, 2: 4}

    # The store agent's path delivering the same offsets again applies nothing.
    asyncio.run(service.observe([r for r in records if r[0] != OWNED]))
    assert len(service.view) == len(want) and followed(metrics) == 5
    asyncio.run(service.observe([r for r in records if r[0] == OWNED]))
    assert len(service.view) == len(want) + PER_PARTITION


def test_single_worker_follows_nothing(stack: StackInfo, unique_name: str, services: list[ContextService]) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.memory"
    ensure_topics(bootstrap, [topic], PARTITIONS)
    produce(bootstrap, topic)
    metrics = EngramMetrics()
    service = context_service(bootstrap, topic, metrics, services)
    app = FakeApp()
    follower = MemoryFollower(bootstrap, topic, f"{unique_name}-follower", {"fetch.wait.max.ms": 100})
    counts: list[int] = []
    register_follower(app, topic, PARTITIONS, follower, service.follow, service.applied.next_offset, counts.append)

    async def run() -> None:
        task = asyncio.create_task(app.tasks[0]())
        for receiver in app.on_partitions_assigned.receivers:
            await receiver(app, [TP(topic, p) for p in range(PARTITIONS)])
        await asyncio.sleep(1.5)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task

    asyncio.run(run())
    assert counts == [0]
    assert len(service.view) == 0 and followed(metrics) == 0


def test_a_partition_taken_over_from_the_follower_is_read_back_to_where_the_store_agent_starts(
    stack: StackInfo, unique_name: str, services: list[ContextService]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.memory"
    records = published(bootstrap, topic)
    metrics = EngramMetrics()
    service = context_service(bootstrap, topic, metrics, services)
    service.catch_up = ViewCatchUp(RangeReader(bootstrap, f"{unique_name}-view"), topic, metrics)
    # The follower had applied partition 0 up to offset 1 when the store agent took it over at 4.
    service.follow([r for r in records if r[0] == 0 and r[1] <= 1])
    stored = [r for r in records if r[0] in (0, 1) and r[1] >= 4]
    asyncio.run(service.observe(stored))

    missing = [i for i in range(5) if service.view.node(f"n-0-{i}") is None]
    assert missing == [], "partition 0: 2 and 3 read back, then the store agent's 4"
    assert service.applied.snapshot() == {0: 4, 1: 4}
    gaps = metric_value(metrics.exposition().decode(), "engram_offset_gaps_total", {"agent": "engram.view"})
    assert gaps == 1, "only partition 0 was behind: partition 1 had no watermark to be behind of"
    assert service.view.node("n-1-3") is None, "offsets before a partition's first record here are not invented"
