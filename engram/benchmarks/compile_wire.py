"""The bench's two ends on the wire: requests produced at a steady pace, compiled contexts read
back as they arrive (``engram bench compile``)."""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import OFFSET_END, Consumer, Producer, TopicPartition

from engram.schemas.codec import AvroCodec
from engram.schemas.records import CompiledContext, ContextRequest
from engram.streams.agents.requests import LOW_LATENCY_SOCKET
from engram.streams.profile import STANDIN


@dataclass
class Replies:
    """Reads engram.context.compiled from its end in a background thread; notes receipt times."""

    bootstrap: str
    topic: str
    received: dict[str, tuple[float, CompiledContext]] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> Replies:
        consumer = Consumer(
            {
                "bootstrap.servers": self.bootstrap,
                "group.id": f"engram-bench-compile-{time.monotonic_ns()}",
                "enable.auto.commit": False,
                # A latency-minded reader: the short fetch wait the worker's request fetcher uses
                # (the bench runs on the embedded stand-ins).
                **STANDIN.request_consumer_settings(),
                **LOW_LATENCY_SOCKET,
            }
        )
        partitions = consumer.list_topics(self.topic, timeout=10).topics[self.topic].partitions
        consumer.assign([TopicPartition(self.topic, p, OFFSET_END) for p in partitions])
        consumer.poll(0.5)  # settle at the end offsets before anything is sent
        self._thread = threading.Thread(target=self._read, args=(consumer,), daemon=True)
        self._thread.start()
        return self

    def _read(self, consumer: Consumer) -> None:
        codec: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
        try:
            while not self._stop.is_set():
                message = consumer.poll(0.05)
                at = time.monotonic()
                if message is None or message.error() is not None:
                    continue
                compiled = codec.decode(message.value() or b"")
                self.received[compiled["request_id"]] = (at, compiled)
        finally:
            consumer.close()

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def wait(self, ids: Sequence[str], timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline and any(i not in self.received for i in ids):
            time.sleep(0.05)


@dataclass
class PacedSender:
    """Produces requests at a steady pace through one producer, connected before the first is timed
    (a new producer's first records wait for its connection and metadata, which would otherwise
    count as broker latency of the first requests)."""

    bootstrap: str
    topic: str
    codec: AvroCodec[ContextRequest] = field(default_factory=lambda: AvroCodec("ContextRequest"))

    def __post_init__(self) -> None:
        self._producer = Producer(
            {
                "bootstrap.servers": self.bootstrap,
                "linger.ms": 0,
                "acks": "all",
                "enable.idempotence": False,
                **LOW_LATENCY_SOCKET,
            }
        )
        self._producer.list_topics(self.topic, timeout=10)

    def send(self, requests: Sequence[ContextRequest], rate: float) -> dict[str, float]:
        """Produce each request at its slot (start + i/rate); returns request id → monotonic send time."""
        encoded = [(r["request_id"], r["user_id"].encode(), self.codec.encode(r)) for r in requests]
        sent: dict[str, float] = {}
        start = time.monotonic() + 0.05
        for i, (request_id, key, value) in enumerate(encoded):
            delay = start + i / rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            sent[request_id] = time.monotonic()
            self._producer.produce(self.topic, key=key, value=value)
            self._producer.poll(0)
        if self._producer.flush(30):
            msg = f"requests to {self.topic} were not all delivered"
            raise RuntimeError(msg)
        return sent
