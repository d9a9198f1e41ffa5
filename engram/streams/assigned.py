"""A confluent-kafka consumer thread that reads the partitions the event loop names.

The worker's request reader (streams/agents/requests.py) and shared-memory follower (streams/follow.py)
both read one topic beside Faust's consumer: manually assigned (no group join, no commits; the
``group.id`` is only required by the client), following an assignment the event loop gives, and
handing batches back to the loop. `AssignedReader` is that thread; a subclass says how it fetches
one batch (`fetch`). Partitions already read keep their position across a new assignment; new
ones start where the assignment says.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Final, Generic, TypeVar

from confluent_kafka import Consumer, KafkaException, Message, TopicPartition

logger = logging.getLogger(__name__)

# How long the thread blocks in one poll; it bounds how quickly it sees a stop or a new
# assignment, not the latency of a record (a poll returns as soon as a fetch brings records).
POLL_S: Final = 0.05
MAX_PER_POLL: Final = 500

B = TypeVar("B")


def polled(consumer: Consumer) -> list[Message]:
    """One poll's messages, events (errors, partition ends) included: the first (waiting up to
    `POLL_S`), then only what is already here (``consume`` waits for its full count or its timeout)."""
    first = consumer.poll(POLL_S)
    if first is None:
        return []
    return [first, *consumer.consume(MAX_PER_POLL, 0)]


def available(consumer: Consumer) -> list[Message]:
    """One poll's records, without errors, events or empty values."""
    return [m for m in polled(consumer) if m.error() is None and m.value() is not None]


@dataclass
class AssignedReader(Generic[B]):
    """The thread; ``assign`` (on the loop) names partition -> start offset (an offset or a
    confluent-kafka logical offset such as ``OFFSET_END``), applied by the thread between polls."""

    bootstrap: str
    topic: str
    group_id: str
    settings: dict[str, str | int | float | bool] = field(default_factory=dict)
    _wanted: dict[int, int] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    thread_name = "engram-assigned-reader"
    stopped_message = "reader stopped"  # logged when the broker fails it for good

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        """librdkafka settings of the consumer (``settings`` are applied over them)."""
        return {"enable.auto.commit": False, "enable.auto.offset.store": False}

    def fetch(self, consumer: Consumer) -> B | None:
        """One batch to deliver, or None (called on the thread while partitions are held)."""
        raise NotImplementedError

    def start(self, deliver: Callable[[B], None]) -> None:
        """Run the thread; ``deliver`` is called on it with each batch."""
        config = {"bootstrap.servers": self.bootstrap, "group.id": self.group_id, **self.consumer_settings()}
        consumer = Consumer({**config, **self.settings})
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, args=(consumer, deliver), name=self.thread_name, daemon=True)
        self._thread.start()

    def assign_from(self, starts: Mapping[int, int]) -> None:
        """Read exactly these partitions (called on the loop; applied by the thread)."""
        with self._lock:
            self._wanted = dict(starts)

    def stop(self, timeout_s: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None

    def _take_wanted(self) -> dict[int, int] | None:
        with self._lock:
            wanted, self._wanted = self._wanted, None
        return wanted

    def _reassign(self, consumer: Consumer, held: set[int], wanted: dict[int, int]) -> set[int]:
        gone = [TopicPartition(self.topic, p) for p in sorted(held - set(wanted))]
        new = [TopicPartition(self.topic, p, start) for p, start in sorted(wanted.items()) if p not in held]
        if gone:
            consumer.incremental_unassign(gone)
        if new:
            consumer.incremental_assign(new)
        return set(wanted)

    def _run(self, consumer: Consumer, deliver: Callable[[B], None]) -> None:
        held: set[int] = set()
        try:
            while not self._stop.is_set():
                wanted = self._take_wanted()
                if wanted is not None:
                    held = self._reassign(consumer, held, wanted)
                if not held:
                    self._stop.wait(POLL_S)
                    continue
                batch = self.fetch(consumer)
                if batch is not None:
                    deliver(batch)
        except KafkaException:
            logger.exception(self.stopped_message)
        finally:
            consumer.close()
