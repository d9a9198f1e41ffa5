"""The view's two feeds over a real broker: the replica topic's follower (every partition, from its
watermarks on, applied once) and the memory agent's path (a partition new to the view is read back
from its beginning, one it is behind on from its watermark)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass, field

import pytest
from confluent_kafka import Producer

from engram.infra.config import StackInfo
from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.embedding.static import StaticEmbedder
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import SLB_DEFAULT, LookasideTable
from engram.processors.tokens import TokenCounter
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.records import NODE_UPSERTED, EventRef, MemoryEvent
from engram.streams.admin import ensure_topics, read_topic
from engram.streams.agents.compile import ContextService
from engram.streams.edge import record_of_message
from engram.streams.follow import MemoryFollower, MemoryRecord, ViewCatchUp, decoded, register_follower
from engram.streams.metrics import EngramMetrics
from engram.streams.output import EventProducer
from engram.streams.ranges import RangeReader
from engram.streams.runner import metric_value

pytestmark = pytest.mark.integration

CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
PARTITIONS = 3
PER_PARTITION = 5
OWNED = 1  # the fake owner set: this "worker's" store agent holds partition 1


@dataclass
class FakeApp:
    """What register_follower uses of a Faust app: app.task."""

    tasks: list[Callable[[], Awaitable[None]]] = field(default_factory=list)

    def task(self, fun: Callable[[], Awaitable[None]]) -> None:
        self.tasks.append(fun)


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


def published(bootstrap: str, topic: str) -> list[MemoryRecord]:
    """Create the topic, produce every partition's nodes, and read them back decoded."""
    ensure_topics(bootstrap, [topic], PARTITIONS)
    produce(bootstrap, topic)
    return decoded(CODEC, [record_of_message(m) for m in read_topic(bootstrap, topic)])


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


async def follow_until(app: FakeApp, metrics: EngramMetrics, expected: int) -> None:
    task = asyncio.ensure_future(app.tasks[0]())
    deadline = time.monotonic() + 30.0
    while followed(metrics) < expected and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    await asyncio.sleep(0.5)  # anything more (a double application) would arrive now
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task


def test_the_follower_reads_every_replica_partition_from_its_watermarks(
    stack: StackInfo, unique_name: str, services: list[ContextService]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    replica = f"{unique_name}.memory.shared"
    records = published(bootstrap, replica)
    assert len(records) == PARTITIONS * PER_PARTITION
    metrics = EngramMetrics()
    service = context_service(bootstrap, f"{unique_name}.memory", metrics, services)
    service.replica_applied.fresh(2, 1)  # partition 2 was applied up to offset 1 before

    app = FakeApp()
    follower = MemoryFollower(bootstrap, replica, f"{unique_name}-follower", {"fetch.wait.max.ms": 100})
    counts: list[int] = []
    register_follower(app, PARTITIONS, follower, service.follow, service.replica_applied.next_offset, counts.append)
    asyncio.run(follow_until(app, metrics, expected=13))

    want = {f"n-{p}-{i}" for p in (0, 1) for i in range(5)} | {f"n-2-{i}" for i in range(2, 5)}
    held = {node_id for node_id in (f"n-{p}-{i}" for p in range(3) for i in range(5)) if service.view.node(node_id)}
    assert held == want, "every partition, each from its watermark"
    assert followed(metrics) == 13, "each followed offset applied once"
    assert counts == [PARTITIONS]
    assert service.replica_applied.snapshot() == {0: 4, 1: 4, 2: 4}
    assert service.applied.snapshot() == {}, "the replica's offsets are not engram.memory's"

    # The owner's own path delivering the same events (engram.memory) changes nothing: upserts by id.
    asyncio.run(service.observe([r for r in records if r.partition == 0]))
    assert len(service.view) == len(want)


def test_a_partition_new_to_the_view_is_read_back_from_its_beginning(
    stack: StackInfo, unique_name: str, services: list[ContextService]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.memory"
    records = published(bootstrap, topic)
    metrics = EngramMetrics()
    service = context_service(bootstrap, topic, metrics, services)
    service.catch_up = ViewCatchUp(RangeReader(bootstrap, f"{unique_name}-view"), topic, metrics)
    # The view holds partition 0 up to offset 1 (its event log); partition 1 is new to it (a
    # rebalance gave it to this worker); the memory agent's batch starts at 4 in both.
    asyncio.run(service.observe([r for r in records if r.partition == 0 and r.offset <= 1]))
    stored = [r for r in records if r.partition in (0, 1) and r.offset >= 4]
    asyncio.run(service.observe(stored))

    missing = [f"n-{p}-{i}" for p in (0, 1) for i in range(5) if service.view.node(f"n-{p}-{i}") is None]
    assert missing == [], "partition 0 read back from 2, partition 1 from its beginning"
    assert service.applied.snapshot() == {0: 4, 1: 4}
    gaps = metric_value(metrics.exposition().decode(), "engram_offset_gaps_total", {"agent": "engram.view"})
    assert gaps == 2
    assert service.view.node("n-2-0") is None, "a partition not assigned here is not read"
