"""The true end of a partition on the stand-in broker (streams/repairs/ends.py) and the table recovery that reads
changelogs to it (streams/repairs/recovery.py), against a real tansu."""

from __future__ import annotations

import asyncio
from collections import Counter
from typing import Any, cast

import faust
from confluent_kafka import Consumer, Producer, TopicPartition
from faust.types import TP

from engram.infra.config import StackInfo
from engram.streams.admin import ensure_topics
from engram.streams.repairs.ends import fetched_ends, topic_ends
from engram.streams.repairs.recovery import ClearFirstTables, FetchedEndsTables


def _publish_in_one_batch(bootstrap: str, topic: str, partition: int, count: int) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 200, "enable.idempotence": False})
    for i in range(count):
        producer.produce(topic, key=b"k", value=str(i).encode(), partition=partition)
    assert producer.flush(30) == 0


def _reported_end(bootstrap: str, topic: str, partition: int) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-watermarks"})
    try:
        return int(consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10, cached=False)[1])
    finally:
        consumer.close()


def test_the_end_of_a_partition_whose_last_batch_holds_many_records(stack: StackInfo, unique_name: str) -> None:
    bootstrap = stack.require_bootstrap_servers()
    ensure_topics(bootstrap, [unique_name], partitions=2)
    _publish_in_one_batch(bootstrap, unique_name, 0, 3)
    _publish_in_one_batch(bootstrap, unique_name, 0, 40)  # the last batch: 40 records from offset 3
    reported = {(unique_name, p): _reported_end(bootstrap, unique_name, p) for p in (0, 1)}
    # What makes this necessary: the stand-in reports the last batch's first offset + 1.
    assert reported[(unique_name, 0)] < 43
    assert fetched_ends(bootstrap, reported) == {(unique_name, 0): 43, (unique_name, 1): 0}
    assert topic_ends(bootstrap, unique_name) == {0: 43, 1: 0}  # the same, every partition of the topic


class _ReportedEnds:
    """The consumer side Faust's recovery asks for ends: here, what the stand-in reports."""

    def __init__(self, bootstrap: str) -> None:
        self.bootstrap = bootstrap

    async def highwaters(self, *tps: TP) -> dict[TP, int]:
        return {tp: _reported_end(self.bootstrap, tp.topic, tp.partition) for tp in tps}


def test_table_recovery_on_the_standin_reads_a_changelog_to_its_fetched_end(stack: StackInfo, unique_name: str) -> None:
    bootstrap = stack.require_bootstrap_servers()
    ensure_topics(bootstrap, [unique_name], partitions=1)
    _publish_in_one_batch(bootstrap, unique_name, 0, 5)
    _publish_in_one_batch(bootstrap, unique_name, 0, 25)  # the last batch: offsets 5-29
    app = faust.App(unique_name, broker=f"kafka://{bootstrap}")
    tp = TP(unique_name, 0)

    async def highwaters(tables: type[ClearFirstTables]) -> int:
        found: Counter[TP] = Counter()
        recovery = tables(app, loop=asyncio.get_running_loop()).recovery
        await recovery._build_highwaters(cast(Any, _ReportedEnds(bootstrap)), {tp}, found, "active")
        return found[tp]

    assert asyncio.run(highwaters(FetchedEndsTables)) == 29  # Faust's highwater: the last record's offset
    assert asyncio.run(highwaters(ClearFirstTables)) < 29  # Faust's own stops inside the last batch
