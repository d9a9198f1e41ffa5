"""Kafka plumbing for commands and tests: create topics, publish, read a topic to its end.

End of data is detected with `enable.partition.eof`, never with watermarks: the stand-in broker
reports a wrong end offset (ARCHITECTURE.md, "What was measured here").
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, Producer, TopicPartition
from confluent_kafka import Consumer as KafkaConsumer
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from engram.streams.config import EngramConfig


class KafkaAdminError(RuntimeError):
    """Topic administration or publishing failed; the message says what and where."""


def ensure_topics(
    bootstrap: str, names: Iterable[str], partitions: int, timeout_s: float = 15.0, compacted: Iterable[str] = ()
) -> None:
    """Create the topics that are missing; those in ``compacted`` with ``cleanup.policy=compact``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    existing = set(admin.list_topics(timeout=timeout_s).topics)
    compact = set(compacted)
    wanted = [
        NewTopic(name, partitions, 1, config={"cleanup.policy": "compact"} if name in compact else {})
        for name in names
        if name not in existing
    ]
    if not wanted:
        return
    for name, future in admin.create_topics(wanted, operation_timeout=timeout_s).items():
        try:
            future.result(timeout=timeout_s)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError.TOPIC_ALREADY_EXISTS:
                continue
            msg = f"cannot create topic {name} on {bootstrap}: {exc}"
            raise KafkaAdminError(msg) from exc


@dataclass
class Publisher:
    """A confluent-kafka producer that counts deliveries and raises on any delivery error;
    ``on_delivered`` sees each delivered message (its partition and offset), on ``flush``'s thread."""

    bootstrap: str
    delivered: int = 0
    errors: list[str] = field(default_factory=list)
    settings: Mapping[str, str | int | float | bool] = field(default_factory=dict)
    on_delivered: Callable[[Message], None] | None = None

    def __post_init__(self) -> None:
        self._producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5, **self.settings})

    @classmethod
    def for_config(cls, config: EngramConfig) -> Publisher:
        """A publisher of inputs that Engram workers consume, with `event_producer_settings`."""
        return cls(config.bootstrap_servers, settings=event_producer_settings(config))

    def _on_delivery(self, err: KafkaError | None, message: Message) -> None:
        if err is not None:
            self.errors.append(str(err))
        else:
            self.delivered += 1
            if self.on_delivered is not None:
                self.on_delivered(message)

    def publish(self, topic: str, key: bytes | None, value: bytes) -> None:
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=self._on_delivery)
                return
            except BufferError:
                self._producer.poll(0.05)

    def flush(self, timeout_s: float = 30.0) -> int:
        remaining = self._producer.flush(timeout_s)
        if remaining or self.errors:
            msg = f"publishing to {self.bootstrap}: {remaining} undelivered, errors: {self.errors[:3]}"
            raise KafkaAdminError(msg)
        return self.delivered


def event_producer_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """Extra librdkafka settings for producers of topics Engram workers consume: the broker
    profile's (`streams.profile.BrokerProfile.event_producer_settings`; none on Kafka, one record
    per batch on the stand-in)."""
    return config.profile.event_producer_settings()


def read_topic(bootstrap: str, topic: str, timeout_s: float = 20.0, group: str | None = None) -> list[Message]:
    """Every message of ``topic`` from the beginning to the current end of each partition."""
    consumer, partitions = _from_beginning(bootstrap, topic, group or f"engram-reader-{time.monotonic_ns()}", timeout_s)
    try:
        return _drain(consumer, partitions, timeout_s)
    finally:
        consumer.close()


def _from_beginning(bootstrap: str, topic: str, group: str, timeout_s: float) -> tuple[KafkaConsumer, set[int]]:
    """A consumer assigned every partition of ``topic`` from its beginning, reporting each end
    (assign, not subscribe: no group join, slow on the stand-in, and no committed offsets)."""
    consumer = KafkaConsumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": group,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "enable.partition.eof": True,
        }
    )
    try:
        partitions = set(consumer.list_topics(topic, timeout=timeout_s).topics[topic].partitions)
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    except BaseException:
        consumer.close()
        raise
    return consumer, partitions


class TopicCounter:
    """Counts a topic's records per partition as they arrive, from the beginning, without reading
    the topic again each time (a long topic on the stand-in takes seconds to read)."""

    def __init__(self, bootstrap: str, topic: str, timeout_s: float = 20.0) -> None:
        self.counts: Counter[int] = Counter()
        group = f"engram-counter-{time.monotonic_ns()}"
        self._consumer, self._partitions = _from_beginning(bootstrap, topic, group, timeout_s)
        self._at_eof: set[int] = set()

    def poll(self, budget_s: float) -> bool:
        """Count what arrives for up to ``budget_s``; True once every partition is at its end."""
        deadline = time.monotonic() + budget_s
        while time.monotonic() < deadline:
            message = self._consumer.poll(0.1)
            if message is None:
                if self._at_eof == self._partitions:
                    return True
                continue
            err = message.error()
            if err is not None and err.code() == KafkaError._PARTITION_EOF:
                self._at_eof.add(message.partition() or 0)
            elif err is not None:
                text = f"consumer error: {err}"
                raise KafkaAdminError(text)
            else:
                self._at_eof.discard(message.partition() or 0)
                self.counts[message.partition() or 0] += 1
        return self._at_eof == self._partitions

    def close(self) -> None:
        self._consumer.close()


def _drain(consumer: KafkaConsumer, partitions: set[int], timeout_s: float) -> list[Message]:
    messages: list[Message] = []
    at_eof: set[int] = set()
    deadline = time.monotonic() + timeout_s
    while at_eof != partitions:
        if time.monotonic() > deadline:
            msg = f"reading to the end timed out; partitions at EOF {sorted(at_eof)} of {sorted(partitions)}"
            raise KafkaAdminError(msg)
        msg_ = consumer.poll(0.2)
        if msg_ is None:
            continue
        err = msg_.error()
        if err is not None:
            if err.code() == KafkaError._PARTITION_EOF:
                at_eof.add(msg_.partition() or 0)
                continue
            text = f"consumer error: {err}"
            raise KafkaAdminError(text)
        at_eof.discard(msg_.partition() or 0)
        messages.append(msg_)
    return messages


def publish_all(publisher: Publisher, topic: str, records: Sequence[tuple[bytes | None, bytes]]) -> None:
    for key, value in records:
        publisher.publish(topic, key, value)
