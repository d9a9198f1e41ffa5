"""Republishing logged records to a topic: ranges, partition choice, and the produce loop.

The produce loop depends on a slim ``RecordProducer`` protocol (confluent-kafka's ``Producer``
satisfies it), so it is tested without a broker. Per-partition order is kept: a source partition
goes to the same target partition when the target has enough partitions, else the producer's
key hash decides; records are produced in log order.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog.ratelimit import TokenBucket
from engram.sinks.eventlog.reader import LogRange


class ReplayRangeError(ValueError):
    """A malformed or empty offset or time range."""


def parse_instant(text: str) -> int:
    """An ISO 8601 instant (or integer epoch milliseconds) as epoch milliseconds, UTC.

    A time without an offset is taken as UTC; ``Z`` and ``+hh:mm`` are honoured.
    """
    stripped = text.strip()
    if stripped.lstrip("-").isdigit():
        return int(stripped)
    try:
        parsed = datetime.fromisoformat(stripped)
    except ValueError as exc:
        msg = f"not an ISO 8601 time or epoch milliseconds: {text!r}"
        raise ReplayRangeError(msg) from exc
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return int(parsed.timestamp() * 1000)


def replay_range(
    from_offset: int | None = None,
    to_offset: int | None = None,
    since: str | None = None,
    until: str | None = None,
) -> LogRange:
    """The ``LogRange`` for the replay command's options; offsets inclusive, ``until`` exclusive."""
    for name, value in (("from-offset", from_offset), ("to-offset", to_offset)):
        if value is not None and value < 0:
            msg = f"--{name} must be >= 0, got {value}"
            raise ReplayRangeError(msg)
    try:
        return LogRange(
            from_offset=from_offset,
            to_offset=to_offset,
            since_ms=None if since is None else parse_instant(since),
            until_ms=None if until is None else parse_instant(until),
        )
    except ReplayRangeError:
        raise
    except ValueError as exc:
        raise ReplayRangeError(str(exc)) from exc


def keeps_partitions(source_partitions: Iterable[int], target_partitions: int) -> bool:
    """Whether every source partition number exists in the target, so records can keep theirs.

    When not, every record is left to the producer's key hash (per-key order is kept either way;
    per-partition order only when partitions are kept).
    """
    return all(0 <= partition < target_partitions for partition in source_partitions)


class RecordProducer(Protocol):
    """What the replay loop needs of a producer (confluent_kafka.Producer fits)."""

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None: ...

    def poll(self, timeout: float = ..., /) -> int: ...

    def flush(self, timeout: float = ..., /) -> int: ...


@dataclass(slots=True)
class ReplaySummary:
    """Counts of one replay. ``failed`` are delivery failures reported by the producer."""

    target: str
    read: int = 0
    produced: int = 0
    delivered: int = 0
    failed: int = 0
    undelivered: int = 0
    seconds: float = 0.0
    per_source: dict[str, int] = field(default_factory=dict)
    first_error: str | None = None

    def as_dict(self) -> dict[str, object]:
        rate = self.delivered / self.seconds if self.seconds > 0 else 0.0
        return {
            "target": self.target,
            "read": self.read,
            "produced": self.produced,
            "delivered": self.delivered,
            "failed": self.failed,
            "undelivered": self.undelivered,
            "seconds": round(self.seconds, 3),
            "messages_per_s": round(rate, 1),
            "per_source": dict(sorted(self.per_source.items())),
            "first_error": self.first_error,
        }


class Republisher:
    """Produces logged records to ``target`` with their raw key, value and timestamp."""

    def __init__(
        self,
        producer: RecordProducer,
        target: str,
        *,
        keep_partitions: bool,
        rate_limit: TokenBucket | None = None,
        flush_timeout_s: float = 60.0,
    ) -> None:
        self.producer = producer
        self.target = target
        self.keep_partitions = keep_partitions
        self.rate_limit = rate_limit
        self.flush_timeout_s = flush_timeout_s

    def run(self, events: Iterable[LoggedEvent], on_progress: Callable[[int], object] | None = None) -> ReplaySummary:
        summary = ReplaySummary(target=self.target)
        started = time.perf_counter()

        def delivered(err: object, _msg: object) -> None:
            if err is None:
                summary.delivered += 1
            else:
                summary.failed += 1
                if summary.first_error is None:
                    summary.first_error = str(err)

        for event in events:
            summary.read += 1
            if self.rate_limit is not None:
                self.rate_limit.acquire()
            self._produce(event, delivered)
            summary.produced += 1
            source = f"{event['topic']}[{event['partition']}]"
            summary.per_source[source] = summary.per_source.get(source, 0) + 1
            if on_progress is not None:
                on_progress(1)
        summary.undelivered = self.producer.flush(self.flush_timeout_s)
        summary.seconds = time.perf_counter() - started
        return summary

    def _produce(self, event: LoggedEvent, on_delivery: Callable[[object, object], None]) -> None:
        kwargs: dict[str, Any] = {
            "value": event["value"],
            "key": event["key"],
            "timestamp": event["timestamp_ms"],
            "on_delivery": on_delivery,
        }
        if self.keep_partitions:
            kwargs["partition"] = event["partition"]
        while True:
            try:
                self.producer.produce(self.target, **kwargs)
            except BufferError:
                # The local queue is full: serve delivery reports until there is room.
                self.producer.poll(0.1)
                continue
            self.producer.poll(0)
            return
