"""Measuring ``engram bench compile``: requests sent at a pace, replies timed, percentiles and the
split of each request's time (compile stages from its `timings_ms`, waiting in the worker, wire)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from engram.benchmarks.compile_wire import PacedSender, Replies
from engram.schemas.records import CompiledContext, ContextRequest
from engram.streams.config import EngramConfig

STAGES: Final = ("route", "embed", "retrieve", "expand", "score", "select", "order", "total")


def percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 3) if values else float("nan")


@dataclass(frozen=True, slots=True)
class Measured:
    latencies_ms: list[float]
    compiled: list[CompiledContext]
    missing: int
    span_s: float  # first send to last receipt
    sent_span_s: float = 0.0  # first send to last send
    received_span_s: float = 0.0  # first receipt to last receipt

    @classmethod
    def of(cls, ids: Sequence[str], sent: dict[str, float], replies: Replies) -> Measured:
        got = [(replies.received[i], sent[i]) for i in ids if i in replies.received]
        received = [at for (at, _), _ in got]
        sends = [sent[i] for i in ids]
        span = max(received, default=0.0) - min(sends, default=0.0)
        return cls(
            [(at - t) * 1000.0 for (at, _), t in got],
            [c for (_, c), _ in got],
            len(ids) - len(got),
            span,
            max(sends, default=0.0) - min(sends, default=0.0),
            max(received, default=0.0) - min(received, default=0.0),
        )

    def keeping_up(self) -> float:
        """Answers per second over requests per second, each over its own span (first to last
        receipt; first to last send): 1.0 while the worker answers as fast as it is offered
        requests, less once replies spread out behind the sends or go missing."""
        answered = len(self.compiled)
        if answered < 2 or self.sent_span_s <= 0 or self.received_span_s <= 0:
            return 0.0
        offered = (answered + self.missing - 1) / self.sent_span_s
        return ((answered - 1) / self.received_span_s) / offered

    def stage_values(self, name: str) -> list[float]:
        return [c["timings_ms"][name] for c in self.compiled if name in c["timings_ms"]]

    def stage(self, name: str, q: float) -> float:
        return percentile(self.stage_values(name), q)

    def outside_compile_ms(self) -> list[float]:
        """Each request's latency less its compile: produce, broker, worker fetch and queue, reply fetch."""
        return [
            lat - c["timings_ms"].get("total", 0.0) for lat, c in zip(self.latencies_ms, self.compiled, strict=True)
        ]

    def outside_split(self, outside: Sequence[float]) -> dict[str, float]:
        """The time outside the compile, split into waiting inside the worker (queued behind other
        requests, from its fetch to its compile) and the rest (produce, the two broker hops, encode)."""
        waits = [c["timings_ms"].get("wait", 0.0) for c in self.compiled]
        rest = [o - w for o, w in zip(outside, waits, strict=True)]
        return {
            "worker_wait_p50_ms": percentile(waits, 50),
            "worker_wait_p99_ms": percentile(waits, 99),
            "wire_p50_ms": percentile(rest, 50),
            "wire_p99_ms": percentile(rest, 99),
        }

    def probe_summary(self, rate: float) -> dict[str, Any]:
        outside = self.outside_compile_ms()
        return {
            "rate": rate,
            "requests": len(self.latencies_ms) + self.missing,
            "p50_ms": percentile(self.latencies_ms, 50),
            "p99_ms": percentile(self.latencies_ms, 99),
            "compile_p50_ms": self.stage("total", 50),
            "compile_p99_ms": self.stage("total", 99),
            "outside_compile_p50_ms": percentile(outside, 50),
            "outside_compile_p99_ms": percentile(outside, 99),
            **self.outside_split(outside),
            "missing": self.missing,
        }

    def summary(self) -> dict[str, Any]:
        outside = self.outside_compile_ms()
        return {
            "p50_ms": percentile(self.latencies_ms, 50),
            "p99_ms": percentile(self.latencies_ms, 99),
            "max_ms": percentile(self.latencies_ms, 100),
            "compile_p50_ms": self.stage("total", 50),
            "compile_p99_ms": self.stage("total", 99),
            "outside_compile_p50_ms": percentile(outside, 50),
            "outside_compile_p99_ms": percentile(outside, 99),
            **self.outside_split(outside),
            "stages_p50_ms": {s: self.stage(s, 50) for s in STAGES},
            "stages_p99_ms": {s: self.stage(s, 99) for s in STAGES},
            "route_counts": dict(sorted(Counter(c["route"] for c in self.compiled).items())),
            "slb_hit_rate": round(sum(c["cache_hit"] for c in self.compiled) / max(1, len(self.compiled)), 3),
            "items_mean": round(sum(len(c["items"]) for c in self.compiled) / max(1, len(self.compiled)), 1),
            "missing": self.missing,
            "answered_per_s": round(len(self.compiled) / self.span_s, 1) if self.span_s > 0 else 0.0,
            "first_decile_p50_ms": percentile(self.latencies_ms[: max(1, len(self.latencies_ms) // 10)], 50),
            "last_decile_p50_ms": percentile(self.latencies_ms[-max(1, len(self.latencies_ms) // 10) :], 50),
            "compile_mean_ms": round(float(np.mean(self.stage_values("total"))), 3) if self.compiled else float("nan"),
        }


def measure(
    config: EngramConfig,
    batches: Sequence[tuple[Sequence[ContextRequest], float]],
    topics: tuple[str, str] | None = None,
) -> list[Measured]:
    """Send each batch of requests paced at its rate (per second), waiting for its answers before
    the next; on the worker's request and reply topics unless ``topics`` names others."""
    out: list[Measured] = []
    requests_topic, replies_topic = topics or (config.topics.requests, config.topics.compiled)
    sender = PacedSender(config.bootstrap_servers, requests_topic)
    with Replies(config.bootstrap_servers, replies_topic) as replies:
        for batch, rate in batches:
            ids = [r["request_id"] for r in batch]
            sent = sender.send(batch, rate)
            replies.wait(ids, timeout_s=60.0)
            out.append(Measured.of(ids, sent, replies))
    return out
