"""The request path's one reader: a consumer of engram.context.requests beside Faust's.

Faust reads every topic of a worker through one consumer with one fetch max-wait, so requests
would queue behind the ingest topics' fetches, and on the tansu stand-in a fetch is held for part
of its max-wait even when data arrives (measured: a message waits ~wait/4 at p50 and ~wait/2 at
p99). Requests are few and small, so they get their own confluent-kafka consumer with a short
fetch wait. It is manually assigned (no group join) to the request partitions numbered like the
engram.memory partitions Faust assigns this worker, so a request is answered where its user's
memory, facts and SLB live (requests and memory are keyed by user and partitioned alike).

It is the only path requests take. It commits its own offsets, under the group
``<app_id>-requests``, once a batch's answers are delivered (commit order step 5, through
`streams.commit.commit_batch`); a partition newly assigned here resumes at that group's committed
offset, or at the beginning when the group never committed it, so after a restart or a rebalance
every request not yet acknowledged is answered again (at-least-once, as everywhere in Engram).
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final

from confluent_kafka import OFFSET_STORED, Consumer, TopicPartition

from engram.schemas.record import RawRecord
from engram.streams.admin import event_producer_settings
from engram.streams.assigned import AssignedReader, available
from engram.streams.config import EngramConfig
from engram.streams.edge import record_of_message

# Nagle's algorithm holds a small write back until the previous one is acknowledged, and librdkafka
# leaves it on by default. Measured here against tansu (one hop, produce to poll, 100 msg/s): p50
# 2.9 -> 2.1 ms at a 5 ms fetch wait, 2.0 -> 0.95 ms at 2 ms. For the clients on the request path
# only: the requests' reader and the replies' producer (and readers, `streams/replies.py`).
LOW_LATENCY_SOCKET: Final[dict[str, str | int | float | bool]] = {"socket.nagle.disable": True}


@dataclass(frozen=True, slots=True)
class Fetched:
    """One poll's requests, and when this worker received them (``time.monotonic()``)."""

    records: list[RawRecord]
    received_s: float

    def next_offsets(self) -> dict[int, int]:
        """Per partition, the offset to commit once the batch is answered: its last offset + 1."""
        out: dict[int, int] = {}
        for record in self.records:
            out[record.partition] = max(out.get(record.partition, 0), record.offset + 1)
        return out


@dataclass
class RequestReader(AssignedReader[Fetched]):
    """The consumer thread that hands requests to the loop, and commits what was answered."""

    thread_name = "engram-request-reader"
    stopped_message = "request reader stopped; no requests are answered until the worker restarts"
    _committer: Consumer | None = field(default=None, init=False, repr=False)

    def consumer_settings(self) -> dict[str, str | int | float | bool]:
        return {**super().consumer_settings(), "auto.offset.reset": "earliest"}

    def assign(self, partitions: Iterable[int]) -> None:
        """Read these partitions, each from the group's committed offset (called on the loop)."""
        self.assign_from(dict.fromkeys(partitions, OFFSET_STORED))

    def fetch(self, consumer: Consumer) -> Fetched | None:
        messages = available(consumer)
        if not messages:
            return None
        now = time.monotonic()
        return Fetched([record_of_message(m) for m in messages], now)

    def commit(self, offsets: Mapping[int, int]) -> None:
        """Commit ``partition -> next offset`` for the group (blocking: call it off the loop). A
        consumer of its own, never assigned, so the reading thread is never disturbed."""
        if self._committer is None:
            config = {"bootstrap.servers": self.bootstrap, "group.id": self.group_id, **self.consumer_settings()}
            self._committer = Consumer({**config, **self.settings})
        wanted = [TopicPartition(self.topic, p, offset) for p, offset in sorted(offsets.items())]
        self._committer.commit(offsets=wanted, asynchronous=False)

    def stop(self, timeout_s: float = 5.0) -> None:
        super().stop(timeout_s)
        if self._committer is not None:
            self._committer.close()
            self._committer = None


def low_latency_consumer_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """Extra librdkafka settings for a latency-minded reader of a low-volume topic (requests,
    compiled contexts): `LOW_LATENCY_SOCKET` on any broker (Kafka answers a fetch as soon as data
    arrives), plus the broker profile's fetch wait (a short one on the stand-in)."""
    return {**LOW_LATENCY_SOCKET, **config.profile.request_consumer_settings()}


def reply_producer_settings(config: EngramConfig) -> dict[str, str | int | float | bool]:
    """The compile path's producer of replies: the settings of every event producer
    (`streams.admin.event_producer_settings`) and `LOW_LATENCY_SOCKET`."""
    return {**event_producer_settings(config), **LOW_LATENCY_SOCKET}


def request_reader(config: EngramConfig, graph: bool = False) -> RequestReader:
    """The worker's reader of context requests (or, with ``graph``, of graph query requests), with
    `low_latency_consumer_settings`; each commits under its own group."""
    settings = low_latency_consumer_settings(config)
    topic, group = (config.topics.graph_requests, "graph-requests") if graph else (config.topics.requests, "requests")
    return RequestReader(config.bootstrap_servers, topic, f"{config.app_id}-{group}", settings)
