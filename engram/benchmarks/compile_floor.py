"""The broker's share of ``engram bench compile``, measured in the same run: the latency floor.

A responder in the bench process answers each request at once, with no compile: it reads requests
through the worker's own reader class and settings (`RequestReader`, `low_latency_consumer_settings`)
and replies through the worker's reply producer settings (`reply_producer_settings`), with a reply
as large as a real compiled context (one of the measured run's, re-addressed and re-encoded per
request). The bench's sender and reader are the same as for the worker, on topics of their own, so
what this measures is produce, two broker hops, decode and encode: what no faster compile removes.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from engram.benchmarks.compile_measure import Measured, measure, percentile
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CompiledContext, ContextRequest
from engram.streams.admin import ensure_topics
from engram.streams.agents.requests import (
    Fetched,
    RequestReader,
    low_latency_consumer_settings,
    reply_producer_settings,
)
from engram.streams.config import EngramConfig
from engram.streams.output import EventProducer

ECHO_SUFFIX = ".bench-floor"


@dataclass
class Responder:
    """Answers every request on ``requests_topic`` with ``template`` re-addressed to it."""

    config: EngramConfig
    requests_topic: str
    replies_topic: str
    template: CompiledContext
    _requests: AvroCodec[ContextRequest] = field(default_factory=lambda: AvroCodec("ContextRequest"))
    _replies: AvroCodec[CompiledContext] = field(default_factory=lambda: AvroCodec("CompiledContext"))

    def __post_init__(self) -> None:
        settings = low_latency_consumer_settings(self.config)
        self._fetcher = RequestReader(self.config.bootstrap_servers, self.requests_topic, "bench-floor", settings)
        self._producer = EventProducer(
            self.config.bootstrap_servers, linger_ms=0, extra=reply_producer_settings(self.config)
        )

    def __enter__(self) -> Responder:
        self._fetcher.start(self._answer)
        self._fetcher.assign(range(self.config.partitions))
        return self

    def __exit__(
        self, _type: type[BaseException] | None, _exc: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self._fetcher.stop()
        self._producer.flush_blocking(10.0)

    def _answer(self, fetched: Fetched) -> None:
        """On the fetch thread: one reply per request, sent at once."""
        for message in fetched.records:
            request = self._requests.decode(message.value or b"")
            reply: CompiledContext = {
                **self.template,
                "request_id": request["request_id"],
                "user_id": request["user_id"],
                "session_id": request["session_id"],
                "query": request["query"],
                "timings_ms": {"total": 0.0},
            }
            self._producer.send(self.replies_topic, message.key, self._replies.encode(reply))
            self._producer.serve_reports(0)


def floor_topics(config: EngramConfig) -> tuple[str, str]:
    """The responder's request and reply topics, created like the worker's."""
    names = (config.topics.requests + ECHO_SUFFIX, config.topics.compiled + ECHO_SUFFIX)
    ensure_topics(config.bootstrap_servers, names, config.partitions)
    return names


def typical(compiled: Sequence[CompiledContext]) -> CompiledContext:
    """The measured context of median size (items), as the responder's reply."""
    ranked = sorted(compiled, key=lambda c: (len(c["items"]), c["request_id"]))
    return ranked[len(ranked) // 2]


def measure_floor(
    config: EngramConfig, template: CompiledContext, requests: Sequence[ContextRequest], rate: float
) -> Measured:
    """The same trip answered at once by a `Responder` (no compile), on topics of its own."""
    topics = floor_topics(config)
    with Responder(config, topics[0], topics[1], template):
        time.sleep(1.0)  # the fetcher resolves its partitions' end offsets before anything is sent
        warm, timed = requests[: len(requests) // 10], requests[len(requests) // 10 :]
        return measure(config, [(warm, rate), (timed, rate)], topics)[1]


def floor_summary(floor: Measured | None, rate: float) -> dict[str, Any] | None:
    """The latency with no compile at all (`compile_floor.Responder`), same rate, same clients."""
    if floor is None:
        return None
    return {
        "p50_ms": percentile(floor.latencies_ms, 50),
        "p99_ms": percentile(floor.latencies_ms, 99),
        "requests": len(floor.latencies_ms) + floor.missing,
        "missing": floor.missing,
        "rate": rate,
        "path": "produce -> broker -> responder (decode; encode a typical compiled context; no compile) "
        "-> broker -> reader",
    }
