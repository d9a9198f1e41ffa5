"""The true end offset of partitions, read by fetching to the end, not asked of the broker.

The stand-in broker answers ``ListOffsets`` (latest) with the first offset of a partition's last
batch + 1, not its true end (infra/standins.py); a fetch's high-watermark is right. Faust's table
recovery reads each changelog up to the ``ListOffsets`` end, so on the stand-in it stopped inside
the last batch and lost the records after it. `fetched_ends` starts a reader one record before the
end the broker reports (the last batch's first record, or the last record where the answer is
right) and takes the offset of the end-of-partition event it gets, which comes from the fetch.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaError, TopicPartition

Partition = tuple[str, int]


class EndsUnreadError(RuntimeError):
    """A partition's end was not reached in time, or the reader failed."""


def fetched_ends(bootstrap: str, reported: Mapping[Partition, int], timeout_s: float = 30.0) -> dict[Partition, int]:
    """The end offset (last offset + 1) of each partition, given the end the broker reported."""
    if not reported:
        return {}
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"engram-ends-{time.monotonic_ns()}",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
            "fetch.wait.max.ms": 10,
        }
    )
    try:
        consumer.assign([TopicPartition(t, p, max(end - 1, 0)) for (t, p), end in reported.items()])
        return _read_to_eof(consumer, reported, timeout_s)
    finally:
        consumer.close()


def _read_to_eof(consumer: Consumer, reported: Mapping[Partition, int], timeout_s: float) -> dict[Partition, int]:
    partitions = set(reported)
    ends: dict[Partition, int] = {}
    deadline = time.monotonic() + timeout_s
    while len(ends) < len(partitions):
        if time.monotonic() > deadline:
            missing = sorted(partitions - set(ends))
            msg = f"no end of partition reached within {timeout_s:.0f}s for {missing}"
            raise EndsUnreadError(msg)
        message = consumer.poll(0.1)
        if message is None:
            continue
        err = message.error()
        where = (message.topic() or "", message.partition() or 0)
        if err is not None and err.code() == KafkaError._PARTITION_EOF:
            # Never below the reported end (an empty partition's end-of-partition event says -1).
            ends[where] = max(message.offset() or 0, reported[where])
        elif err is not None:
            msg = f"reading the end of {where}: {err}"
            raise EndsUnreadError(msg)
        else:
            ends.pop(where, None)  # a record after an end seen: the partition grew, read on
    return ends


def topic_ends(bootstrap: str, topic: str, timeout_s: float = 30.0) -> dict[int, int]:
    """The end offset (last offset + 1) of every partition of ``topic``, as a fetch finds it."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"engram-ends-{time.monotonic_ns()}"})
    try:
        partitions = consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions
        reported = {}
        for partition in partitions:
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=timeout_s, cached=False)
            reported[(topic, partition)] = int(high)
    finally:
        consumer.close()
    return {partition: end for (_, partition), end in fetched_ends(bootstrap, reported, timeout_s).items()}
