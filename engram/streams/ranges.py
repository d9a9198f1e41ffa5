"""Blocking reads of an offset range from the broker, outside any consumer group's assignment.

A confluent-kafka consumer with a manual ``assign`` (no group join, no commits) reads records
``start <= offset < end`` of one partition, and the group's committed offset of a partition. Gap
repair (streams/repairs/gaps.py) reads back offsets Faust never delivered with it, and the view's
catch-up (streams/follow.py) the offsets it is behind on when a partition changes hands.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from engram.schemas.record import RawRecord
from engram.streams.edge import record_of_message


class RangeReadError(RuntimeError):
    """A missing offset range could not be read back from the broker in time."""


@dataclass(frozen=True, slots=True)
class RangeReadConfig:
    """How a missing range is read. ``fetch_wait_ms`` is short because the reader's caller waits
    on it; the reads are rare and small."""

    timeout_s: float = 30.0
    poll_s: float = 0.1
    fetch_wait_ms: int = 50


DEFAULT_READ = RangeReadConfig()


class RangeReader:
    """Blocking broker reads: where the group resumed, and an offset range."""

    def __init__(self, bootstrap: str, group_id: str, config: RangeReadConfig = DEFAULT_READ) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.config = config
        self._consumer: Consumer | None = None

    def _client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": self.group_id,  # only to read the group's committed offsets
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "fetch.wait.max.ms": self.config.fetch_wait_ms,
                }
            )
        return self._consumer

    def resumed_at(self, topic: str, partition: int) -> int:
        """The group's committed offset of the partition, or the log start when it has none."""
        client = self._client()
        tp = TopicPartition(topic, partition)
        try:
            committed = client.committed([tp], timeout=self.config.timeout_s)[0].offset
            if committed >= 0:
                return int(committed)
            low, _high = client.get_watermark_offsets(tp, timeout=self.config.timeout_s)
        except KafkaException as exc:
            msg = f"where group {self.group_id} resumed {topic}[{partition}]: {exc}"
            raise RangeReadError(msg) from exc
        return max(0, int(low))

    def read(self, topic: str, partition: int, start: int, end: int) -> list[RawRecord]:
        """Records ``start <= offset < end`` of the partition, in offset order."""
        client = self._client()
        client.assign([TopicPartition(topic, partition, start)])
        try:
            return self._drain(client, topic, partition, start, end)
        finally:
            client.unassign()

    def _drain(self, client: Consumer, topic: str, partition: int, start: int, end: int) -> list[RawRecord]:
        out: list[RawRecord] = []
        next_offset = start
        deadline = time.monotonic() + self.config.timeout_s
        while next_offset < end:
            if time.monotonic() > deadline:
                wanted = f"offsets {start}..{end - 1} of {topic}[{partition}]"
                msg = f"read {len(out)} of {wanted} in {self.config.timeout_s}s"
                raise RangeReadError(msg)
            record = client.poll(self.config.poll_s)
            if record is None:
                continue
            err = record.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                msg = f"reading {topic}[{partition}] at {next_offset}: {err}"
                raise RangeReadError(msg)
            offset = record.offset() or 0
            if offset < next_offset:
                continue
            next_offset = offset + 1
            if offset < end:
                out.append(record_of_message(record))
        return out

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None
