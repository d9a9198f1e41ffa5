"""The request reader against the stand-in broker: it reads only the partitions it is assigned,
each from its group's committed offset (the beginning when there is none), hands each request over
with its coordinates, stops reading a partition taken away, and a new reader of the group resumes
after what was committed."""

from __future__ import annotations

import threading
import time

import pytest
from confluent_kafka import Producer

from engram.infra.config import StackInfo
from engram.schemas.record import RawRecord
from engram.streams.admin import ensure_topics
from engram.streams.agents.requests import Fetched, RequestReader
from engram.streams.profile import STANDIN

pytestmark = pytest.mark.integration


class Inbox:
    def __init__(self) -> None:
        self.records: list[RawRecord] = []
        self._lock = threading.Lock()

    def deliver(self, fetched: Fetched) -> None:
        with self._lock:
            self.records.extend(fetched.records)

    def values(self) -> set[bytes]:
        with self._lock:
            return {r.value for r in self.records if r.value is not None}

    def wait_for(self, values: set[bytes], timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not values <= self.values() and time.monotonic() < deadline:
            time.sleep(0.02)


def publish(bootstrap: str, topic: str, tag: str, count: int) -> dict[int, set[bytes]]:
    """``count`` values per partition, e.g. b"tag-p0-3", produced to explicit partitions."""
    producer = Producer({"bootstrap.servers": bootstrap, **STANDIN.client_settings("producer")})
    out: dict[int, set[bytes]] = {0: set(), 1: set()}
    for partition in (0, 1):
        for i in range(count):
            value = f"{tag}-p{partition}-{i}".encode()
            producer.produce(topic, value, b"user", partition=partition)
            out[partition].add(value)
    assert producer.flush(20.0) == 0
    return out


def reader(bootstrap: str, topic: str, group: str) -> RequestReader:
    return RequestReader(bootstrap, topic, group, STANDIN.request_consumer_settings())


def test_reader_reads_its_partitions_from_the_committed_offset(stack: StackInfo, unique_name: str) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.requests"
    group = f"{unique_name}-requests"
    ensure_topics(bootstrap, [topic], 2)
    before = publish(bootstrap, topic, "before", 3)

    first, inbox = reader(bootstrap, topic, group), Inbox()
    first.assign([0, 1])
    first.start(inbox.deliver)
    try:
        inbox.wait_for(before[0] | before[1])
        assert inbox.values() == before[0] | before[1], "no commit yet: from the beginning"
        positions = [(r.partition, r.offset) for r in inbox.records]
        assert len(set(positions)) == len(positions) == 6 and all(r.topic == topic for r in inbox.records)
        first.commit({0: 2, 1: 3})  # partition 0 answered up to offset 1, partition 1 entirely

        first.assign([1])
        time.sleep(0.5)
        later = publish(bootstrap, topic, "later", 2)
        inbox.wait_for(later[1])
        time.sleep(0.3)  # give a wrongly kept partition 0 time to show up
        assert inbox.values() == before[0] | before[1] | later[1], "partition 0 is no longer read"
    finally:
        first.stop()

    again, resumed = reader(bootstrap, topic, group), Inbox()
    again.assign([0, 1])
    again.start(resumed.deliver)
    try:
        expected = {b"before-p0-2"} | later[0] | later[1]
        resumed.wait_for(expected)
        time.sleep(0.3)
        assert resumed.values() == expected, "each partition from its committed offset"
    finally:
        again.stop()
