"""Gap repair (streams/repairs/gaps.py) over real topics on the stand-in broker: an agent's consumer path
fed batches with skipped offsets loses nothing, and a rebalance-like jump reads nothing."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition

from engram.infra.config import StackInfo
from engram.schemas.record import RawRecord, Record
from engram.sinks.eventlog.reader import EventLogReader
from engram.sinks.eventlog.sink import EventLogSink
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.agents.archive import archive
from engram.streams.commit import CommitTargets
from engram.streams.metrics import EngramMetrics
from engram.streams.profile import STANDIN
from engram.streams.repairs.gaps import GapRepair, gap_repair
from engram.streams.runner import metric_value

pytestmark = pytest.mark.integration

RECORDS = 30


def published_topic(stack: StackInfo, name: str) -> list[RawRecord]:
    """A one-partition topic holding RECORDS records (value ``v<offset>``), read back as records."""
    bootstrap = stack.require_bootstrap_servers()
    ensure_topics(bootstrap, [name], 1)
    publisher = Publisher(bootstrap, settings=STANDIN.event_producer_settings())
    for i in range(RECORDS):
        publisher.publish(name, b"user-1", f"v{i}".encode())
    assert publisher.flush() == RECORDS
    return [
        Record(name, m.partition() or 0, m.offset() or 0, m.timestamp()[1], m.key(), m.value())
        for m in read_topic(bootstrap, name)
    ]


def batches(events: list[RawRecord], size: int) -> list[list[RawRecord]]:
    return [events[i : i + size] for i in range(0, len(events), size)]


def complete_all(repair: GapRepair, delivered: list[RawRecord], size: int) -> list[list[RawRecord]]:
    async def run() -> list[list[RawRecord]]:
        return [await repair.complete(batch) for batch in batches(delivered, size)]

    return asyncio.run(run())


def test_skipped_offsets_reach_the_event_log_in_order(stack: StackInfo, unique_name: str, tmp_path: Path) -> None:
    topic = f"{unique_name}.engram.memory"
    events = published_topic(stack, topic)
    assert [e.offset for e in events] == list(range(RECORDS))
    skipped = {0, 1, 2, *range(10, 15), 21}  # from the resume point, mid-batch, and across batches
    delivered = [e for e in events if e.offset not in skipped]
    metrics = EngramMetrics()
    repair = gap_repair(stack.require_bootstrap_servers(), f"{unique_name}-group", metrics, "engram.archive")
    sink = EventLogSink(tmp_path / "eventlog")
    sink.setup()
    try:
        completed = complete_all(repair, delivered, 7)
        for batch in completed:
            asyncio.run(archive(batch, CommitTargets(sink, metrics=metrics)))
    finally:
        repair.close()
        sink.close()

    offsets = [e.offset for batch in completed for e in batch]
    assert offsets == list(range(RECORDS)), "every offset once, in order"
    logged = list(EventLogReader(tmp_path / "eventlog").read([topic]))
    assert [(e["offset"], e["value"]) for e in logged] == [(i, f"v{i}".encode()) for i in range(RECORDS)]
    assert {e["key"] for e in logged} == {b"user-1"}
    gaps = metric_value(metrics.exposition().decode(), "engram_offset_gaps_total", {"topic": topic})
    assert gaps == 3, "the three skipped ranges are counted"


def test_a_jump_to_the_committed_offset_reads_nothing(stack: StackInfo, unique_name: str) -> None:
    """A partition that comes back after another worker committed further is not a gap."""
    topic = f"{unique_name}.engram.turns"
    events = published_topic(stack, topic)
    group = f"{unique_name}-group"
    committer = Consumer({"bootstrap.servers": stack.require_bootstrap_servers(), "group.id": group})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 20)], asynchronous=False)
    finally:
        committer.close()
    metrics = EngramMetrics()
    repair = gap_repair(stack.require_bootstrap_servers(), group, metrics, "engram.ingest.ConversationTurn")
    delivered = events[:5] + events[20:]  # owned 0..4, lost the partition, got it back at 20
    try:
        completed = complete_all(repair, delivered, 5)
    finally:
        repair.close()
    assert [e.offset for batch in completed for e in batch] == [e.offset for e in delivered]
    assert metric_value(metrics.exposition().decode(), "engram_offset_gaps_total") == 0
