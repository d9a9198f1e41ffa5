"""The derived-event producer: engram.memory, engram.context.compiled, dead letters and the tables'
changelog records.

Derived events are many (several per input) so they go through confluent-kafka's C producer, not
Faust's; so do the tables' changelog records (streams/repairs/changelog.py), which Faust's producer sent one
by one on the event loop, each a Python future, a callback and an aiokafka batch. `flush` runs off
the event loop and raises if any record was not delivered: it ends steps 3 and 4 of the commit
order (streams/commit.py). The compile path instead tracks each record's own delivery report
(`send_reported`), which keeps the same order per request without waiting for a flush between
requests.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from confluent_kafka import KafkaError, Message, Producer

PARTITION_ANY: Final = -1  # librdkafka's RD_KAFKA_PARTITION_UA: the partitioner picks


class DeliveryError(RuntimeError):
    """Some derived events were not acknowledged by the broker; the batch must not be committed."""


@dataclass
class EventProducer:
    bootstrap: str
    linger_ms: int = 5
    extra: dict[str, str | int | float | bool] = field(default_factory=dict)
    delivered: int = 0
    # The end (last acknowledged offset + 1) of each (topic, partition) this producer wrote to:
    # what the broker holds at least, before any consumer's fetch has seen it (streams/pacing.py).
    ends: dict[tuple[str, int], int] = field(default_factory=dict)
    _errors: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": self.linger_ms,
                "acks": "all",
                "queue.buffering.max.messages": 500_000,
                **self.extra,
            }
        )

    def _on_delivery(self, err: KafkaError | None, msg: Message) -> None:
        if err is None:
            self.delivered += 1
            where, end = (msg.topic() or "", msg.partition() or 0), (msg.offset() or 0) + 1
            if end > self.ends.get(where, 0):
                self.ends[where] = end
        else:
            self._errors.append(str(err))

    def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        self._produce(topic, key, value, self._on_delivery)

    def send_to(
        self,
        topic: str,
        partition: int,
        key: bytes,
        value: bytes | None,
        on_offset: Callable[[int], None] | None = None,
    ) -> None:
        """Send one record to ``partition`` (a table's changelog: the key's source partition; a
        None value is a tombstone). `flush` waits for it with the rest; ``on_offset`` is given its
        offset once acknowledged (a table store writes the key to disk with it)."""
        if on_offset is None:
            self._produce(topic, key, value, self._on_delivery, partition)
            return

        def on_delivery(err: KafkaError | None, msg: Message) -> None:
            self._on_delivery(err, msg)
            if err is None:
                on_offset(msg.offset() or 0)

        self._produce(topic, key, value, on_delivery, partition)

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Callable[[bool], None]) -> None:
        """Send one record and call ``report(delivered)`` for it alone, on the thread that serves
        delivery reports (`serve_reports`). Its failure is reported there, not raised by `flush`.
        The compile path uses this to go on while the broker acknowledges its last answer."""

        def on_delivery(err: KafkaError | None, _msg: Message) -> None:
            if err is None:
                self.delivered += 1
            report(err is None)

        self._produce(topic, key, value, on_delivery)

    def serve_reports(self, timeout_s: float) -> int:
        """Wait up to ``timeout_s`` for delivery reports (returning at the first) and run their
        callbacks; returns how many records are still in flight."""
        self._producer.poll(timeout_s)
        return len(self._producer)

    def _produce(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        on_delivery: Callable[[KafkaError | None, Message], None],
        partition: int = PARTITION_ANY,
    ) -> None:
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, partition=partition, on_delivery=on_delivery)
                return
            except BufferError:
                self._producer.poll(0.01)

    def flush_blocking(self, timeout_s: float = 30.0) -> None:
        remaining = self._producer.flush(timeout_s)
        if remaining or self._errors:
            errors, self._errors = self._errors[:5], []
            msg = f"{remaining} records undelivered after {timeout_s}s; errors: {errors}"
            raise DeliveryError(msg)

    async def flush(self) -> None:
        await asyncio.to_thread(self.flush_blocking)
