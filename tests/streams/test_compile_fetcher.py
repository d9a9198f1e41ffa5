"""The request fetcher against the stand-in broker: it reads only the partitions it is assigned,
from their end at assignment, hands each request over with its partition and offset, and stops
reading a partition once it is taken away.

tansu reports a partition's end as the first offset of its last batch + 1, so a fetcher starting
"at the end" may re-read the rest of that batch; the `RequestLedger` makes that harmless, and the
test allows exactly that much."""

from __future__ import annotations

import threading
import time

import pytest

from infra.config import StackInfo
from streams.admin import Publisher, ensure_topics
from streams.agents.requests import RequestFetcher, RequestMessage
from streams.profile import STANDIN

pytestmark = pytest.mark.integration


class Inbox:
    def __init__(self) -> None:
        self.messages: list[RequestMessage] = []
        self._lock = threading.Lock()

    def deliver(self, batch: list[RequestMessage]) -> None:
        with self._lock:
            self.messages.extend(batch)

    def values(self) -> set[bytes]:
        with self._lock:
            return {m.value for m in self.messages if m.value is not None}

    def wait_for(self, values: set[bytes], timeout_s: float = 10.0) -> None:
        deadline = time.monotonic() + timeout_s
        while not values <= self.values() and time.monotonic() < deadline:
            time.sleep(0.02)


def publish(bootstrap: str, topic: str, partition_keys: dict[int, bytes], tag: str, count: int) -> set[bytes]:
    """``count`` values per partition (keys chosen per partition), e.g. b"tag-p0-3"."""
    publisher = Publisher(bootstrap)
    values: set[bytes] = set()
    for partition, key in partition_keys.items():
        for i in range(count):
            value = f"{tag}-p{partition}-{i}".encode()
            publisher.publish(topic, key, value)
            values.add(value)
    publisher.flush()
    return values


def keys_by_partition(bootstrap: str, topic: str) -> dict[int, bytes]:
    """One key per partition, found by producing probes and reading where they landed."""
    found: dict[int, bytes] = {}
    probe = RequestFetcher(bootstrap, topic, "probe", STANDIN.request_consumer_settings())
    inbox = Inbox()
    probe.assign([0, 1])
    probe.start(inbox.deliver)
    try:
        time.sleep(1.0)  # the probe settles at the end offsets
        publisher = Publisher(bootstrap)
        for i in range(16):
            publisher.publish(topic, f"user-{i}".encode(), f"probe-{i}".encode())
        publisher.flush()
        inbox.wait_for({f"probe-{i}".encode() for i in range(16)})
    finally:
        probe.stop()
    for m in inbox.messages:
        found.setdefault(m.partition, m.key or b"")
    assert set(found) == {0, 1}, f"16 keys should cover both partitions, got {found}"
    return found


def test_fetcher_reads_only_its_partitions_from_their_end(stack: StackInfo, unique_name: str) -> None:
    bootstrap = stack.require_bootstrap_servers()
    topic = f"{unique_name}.requests"
    ensure_topics(bootstrap, [topic], 2)
    keys = keys_by_partition(bootstrap, topic)
    before = publish(bootstrap, topic, keys, "before", 3)

    fetcher = RequestFetcher(bootstrap, topic, f"{unique_name}-fetcher", STANDIN.request_consumer_settings())
    inbox = Inbox()
    fetcher.assign([0, 1])
    fetcher.start(inbox.deliver)
    try:
        time.sleep(1.0)  # the assignment settles at the end offsets
        both = publish(bootstrap, topic, keys, "both", 4)
        inbox.wait_for(both)
        assert both <= inbox.values(), "everything after the assignment"
        early = inbox.values() - both
        assert early <= before - {b"before-p0-0", b"before-p1-0"}, "at most the tail of the last batch before"
        offsets = [(m.partition, m.offset) for m in inbox.messages]
        assert len(set(offsets)) == len(offsets) == 8 + len(early), "each record handed over once"
        assert all(m.topic == topic for m in inbox.messages)

        fetcher.assign([1])
        time.sleep(0.5)
        later = publish(bootstrap, topic, keys, "later", 2)
        kept = {v for v in later if b"-p1-" in v}
        inbox.wait_for(both | kept)
        time.sleep(0.3)  # give a wrongly kept partition 0 time to show up
        assert inbox.values() == both | kept | early, "partition 0 is no longer read"
    finally:
        fetcher.stop()
