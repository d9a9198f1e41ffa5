"""The low-latency hop for context requests: a dedicated fetcher beside Faust's consumer.

Faust reads every topic of a worker through one consumer with one fetch max-wait. On the tansu
stand-in a fetch is held for a good part of its max-wait even when data arrives (measured: a
message waits ~wait/4 at p50 and ~wait/2 at p99), and a short wait for the whole consumer starves
tansu during a big ingest. Requests are few and small, so they get their own confluent-kafka
consumer with a short fetch wait, manually assigned to exactly the request partitions Faust gives
this worker (so a request is answered where its user's memory and SLB live).

The fetcher only accelerates. The Faust agent on the same topic stays the guaranteed path: it
acknowledges a request (Faust then commits its offset) only once a compiled context for it was
delivered, by whichever path claimed it first; it answers anything the fetcher missed (requests
sent before the fetcher's assignment, a delivery that failed). The `RequestLedger` makes each
(partition, offset) answered once per worker life; after a restart Faust redelivers what was not
committed (at-least-once, as everywhere in Engram).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import OFFSET_END, Consumer, Message

from streams.admin import event_producer_settings
from streams.assigned import AssignedReader, available
from streams.config import EngramConfig

# Nagle's algorithm holds a small write back until the previous one is acknowledged, and librdkafka
# leaves it on by default. Measured here against tansu (one hop, produce to poll, 100 msg/s): p50
# 2.9 -> 2.1 ms at a 5 ms fetch wait, 2.0 -> 0.95 ms at 2 ms. For the clients on the request path
# only: the requests' readers and the replies' producer (and readers, `streams/replies.py`).
LOW_LATENCY_SOCKET: Final[dict[str, str | int | float | bool]] = {"socket.nagle.disable": True}


@dataclass(frozen=True, slots=True)
class RequestMessage:
    """One raw request as either path read it (Faust ``Message`` or confluent-kafka ``Message``)."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    received_s: float = 0.0  # time.monotonic() when this worker got it (its wait is reported)

    @classmethod
    def of_faust(cls, message: Any) -> RequestMessage:
        return cls(message.topic, message.partition, message.offset, message.key, message.value, time.monotonic())

    @classmethod
    def of_kafka(cls, message: Message, received_s: float) -> RequestMessage:
        return cls(
            message.topic() or "",
            message.partition() or 0,
            message.offset() or 0,
            message.key(),
            message.value(),
            received_s,
        )


@dataclass
class RequestLedger:
    """Which request offsets are taken (by either path) and whether their answers were delivered.

    Lives on the event loop; both paths run there, so claiming needs no lock. ``settled`` holds,
    per partition, the next offset the Faust path has not acknowledged yet: everything below it is
    answered for good, and claims below it are dropped, which keeps the ledger small.
    """

    claims: dict[int, dict[int, asyncio.Future[bool]]] = field(default_factory=dict)
    settled: dict[int, int] = field(default_factory=dict)

    def claim(self, partition: int, offset: int) -> asyncio.Future[bool] | None:
        """A new future for an unclaimed, unsettled request; None if it is already taken."""
        if offset < self.settled.get(partition, 0):
            return None
        claimed = self.claims.setdefault(partition, {})
        if offset in claimed:
            return None
        future: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
        claimed[offset] = future
        return future

    def claimed(self, partition: int, offset: int) -> asyncio.Future[bool] | None:
        return self.claims.get(partition, {}).get(offset)

    def release(self, partition: int, offset: int) -> None:
        """Forget a claim whose delivery failed, so the Faust path answers it again."""
        self.claims.get(partition, {}).pop(offset, None)

    def settle(self, partition: int, offset: int) -> None:
        """The Faust path acknowledges ``offset``: it and everything before it are answered."""
        self.settled[partition] = max(self.settled.get(partition, 0), offset + 1)
        claimed = self.claims.get(partition, {})
        for old in [o for o in claimed if o <= offset]:
            del claimed[old]

    def forget(self, partitions: Iterable[int]) -> None:
        """Partitions revoked from this worker: another worker owns their requests now."""
        for partition in partitions:
            self.claims.pop(partition, None)
            self.settled.pop(partition, None)


@dataclass
class RequestFetcher(AssignedReader[list[RequestMessage]]):
    """A confluent-kafka consumer thread, manually assigned, that hands requests to the loop.

    It never joins a group and never commits; partitions newly assigned start at the end, because
    the Faust path answers anything earlier. ``settings`` are extra librdkafka settings (the
    stand-in's short fetch wait).
    """

    thread_name = "engram-request-fetcher"
    stopped_message = "request fetcher stopped; requests go through the Faust consumer only"

    def assign(self, partitions: Iterable[int]) -> None:
        """Follow Faust's assignment (called on the loop; applied by the fetch thread)."""
        self.assign_from(dict.fromkeys(partitions, OFFSET_END))

    def fetch(self, consumer: Consumer) -> list[RequestMessage] | None:
        fetched = available(consumer)
        now = time.monotonic()
        return [RequestMessage.of_kafka(m, now) for m in fetched] or None


def low_latency_consumer_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """Extra librdkafka settings for a latency-minded reader of a low-volume topic (requests,
    compiled contexts): `LOW_LATENCY_SOCKET` on any broker (Kafka answers a fetch as soon as data
    arrives), plus the broker profile's fetch wait (a short one on the stand-in)."""
    return {**LOW_LATENCY_SOCKET, **config.profile.request_consumer_settings()}


def reply_producer_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """The compile path's producer of replies: the settings of every event producer
    (`streams.admin.event_producer_settings`) and `LOW_LATENCY_SOCKET`."""
    return {**event_producer_settings(config), **LOW_LATENCY_SOCKET}


def request_fetcher(config: EngramConfig) -> RequestFetcher:
    """The worker's fetcher, with `low_latency_consumer_settings`."""
    settings = low_latency_consumer_settings(config)
    return RequestFetcher(config.bootstrap_servers, config.topics.requests, f"{config.app_id}-requests", settings)
