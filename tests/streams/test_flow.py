"""Pausing an input partition while Faust hands on a fetched batch of it loses nothing
(streams/repairs/pausing.py), on a real (unstarted) Faust consumer over a real aiokafka client: the pause
lands in the client, where fetching happens, and the batch is delivered whole. Paused in Faust's
own set instead, the rest of the batch is skipped, with the fetch position already past it."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import Callable, Iterator

import faust
import pytest
from aiokafka import AIOKafkaConsumer, TopicPartition
from aiokafka.structs import ConsumerRecord
from faust.transport.consumer import Consumer
from faust.types import TP

from engram.streams.repairs.pausing import FetchedInputs, consumer_thread, set_fetching

TURNS = TP("engram.turns", 0)
BATCH = 10


@pytest.fixture(autouse=True)
def collected() -> Iterator[None]:
    """Collect the test's app here: collected later, inside another test's `ast.parse`, its
    finalizers trip CPython 3.11's "AST constructor recursion depth mismatch" check."""
    yield
    gc.collect()


def fetched(n: int) -> dict[TP, list[ConsumerRecord[bytes, bytes]]]:
    return {TURNS: [ConsumerRecord(TURNS.topic, 0, i, 0, 0, b"ada", b"turn", None, 3, 4, []) for i in range(n)]}


def faust_consumer(client: AIOKafkaConsumer) -> Consumer:
    """Faust's consumer with ``client`` as its thread's aiokafka client; its next fetch returns
    `BATCH` records of `TURNS`."""
    app = faust.App("flow-test", broker="kafka://127.0.0.1:1")
    consumer = app.consumer
    assert isinstance(consumer, Consumer)
    consumer._active_partitions = {TURNS}  # noqa: SLF001 - as an assignment would set them
    consumer_thread(app)._consumer = client  # noqa: SLF001 - as the thread's start would set it

    async def next_records(timeout: float) -> tuple[object, set[TP]]:
        return fetched(BATCH), consumer._get_active_partitions()  # noqa: SLF001

    setattr(consumer, "_wait_next_records", next_records)  # noqa: B010 - the fetch, stubbed
    return consumer


async def delivered(pause: Callable[[Consumer], None]) -> tuple[list[int], set[TopicPartition]]:
    """The offsets Faust hands on from one fetch when ``pause`` runs after the first, and the
    partitions the client has paused then."""
    client = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1")
    client.assign([TopicPartition(TURNS.topic, TURNS.partition)])
    consumer = faust_consumer(client)
    offsets: list[int] = []
    try:
        async for _, message in consumer.getmany(timeout=1.0):
            offsets.append(message.offset)
            if len(offsets) == 1:
                pause(consumer)
        return offsets, set(client.paused())
    finally:
        await client.stop()
        consumer_thread(consumer.app).thread_loop.close()  # never started: its loop is only built


def pause_in_client(consumer: Consumer) -> None:
    """streams/repairs/pausing.py's pause, its step run here (the worker runs it on the consumer thread)."""
    client = consumer_thread(consumer.app)._ensure_consumer()  # noqa: SLF001
    FetchedInputs(consumer.app, frozenset({TURNS.topic}), lambda step: step(client)).pause({TURNS})


def test_a_pause_mid_delivery_delivers_the_fetched_batch_and_stops_the_fetch() -> None:
    offsets, paused = asyncio.run(delivered(pause_in_client))
    assert offsets == list(range(BATCH)), "records fetched before the pause were skipped"
    assert paused == {TopicPartition(TURNS.topic, TURNS.partition)}, "the client still fetches the partition"


def test_a_drained_stream_buffer_does_not_resume_a_paused_input() -> None:
    """Faust's buffer flow control makes a partition active again when its stream's buffer drains;
    the fetch paused in the client stays paused."""

    def pause_then_drain(consumer: Consumer) -> None:
        pause_in_client(consumer)
        consumer.on_buffer_full(TURNS)
        consumer.on_buffer_drop(TURNS)

    _, paused = asyncio.run(delivered(pause_then_drain))
    assert paused == {TopicPartition(TURNS.topic, TURNS.partition)}, "a drained buffer resumed the fetch"


def test_faust_s_own_pause_skips_the_rest_of_the_batch() -> None:
    """What streams/repairs/pausing.py avoids: the fetch position is past these records, so they were lost."""
    offsets, _ = asyncio.run(delivered(lambda consumer: consumer.pause_partitions({TURNS})))
    assert offsets == [0]


def test_set_fetching_resumes_and_skips_partitions_no_longer_assigned() -> None:
    async def run() -> tuple[set[TopicPartition], set[TopicPartition]]:
        client = AIOKafkaConsumer(bootstrap_servers="127.0.0.1:1")
        client.assign([TopicPartition(TURNS.topic, 0)])
        try:
            gone = TP(TURNS.topic, 1)  # taken by a rebalance
            set_fetching(client, {TURNS, gone}, fetch=False)
            paused = set(client.paused())
            set_fetching(client, {TURNS, gone}, fetch=True)
            return paused, set(client.paused())
        finally:
            await client.stop()

    paused, resumed = asyncio.run(run())
    assert paused == {TopicPartition(TURNS.topic, 0)}
    assert resumed == set()
