"""The sink contract: the base class owns batching, flush, retry and backoff; a backend only writes.

A backend implements ``write(batch)`` and raises ``SinkBackpressureError(retry_after)`` when its
store pushes back, or ``SinkTransientError`` for a failure worth retrying. Anything else is a bug
or a permanent failure and propagates. Writes must be idempotent (upserts by deterministic id), so
that a batch retried or replayed after a crash neither loses nor duplicates anything.

Batches are per (topic, partition) and keep source order. ``flush`` returns the highest offset
written per partition; the caller commits offsets only after that (see streams/commit.py).
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from engram.schemas.record import Record

T = TypeVar("T")
TopicPartition = tuple[str, int]


class SinkError(Exception):
    """Base class of sink failures."""


class SinkBackpressureError(SinkError):
    """The store asks us to slow down; retry the same batch after ``retry_after`` seconds."""

    def __init__(self, retry_after: float, message: str = "store pushed back") -> None:
        super().__init__(f"{message}; retry after {retry_after:.3f}s")
        self.retry_after = retry_after


class SinkTransientError(SinkError):
    """A failure worth retrying with backoff (connection reset, timeout)."""


class SinkRetriesExhaustedError(SinkError):
    """A batch still failed after the configured retries; nothing was acknowledged."""


@dataclass(frozen=True, slots=True)
class SinkConfig:
    """Batching and retry tunables. Seconds for times."""

    max_batch: int = 1000
    max_retries: int = 6
    backoff_initial_s: float = 0.05
    backoff_max_s: float = 2.0


@dataclass(slots=True)
class SinkBatch(Generic[T]):
    """Items of one (topic, partition), in offset order."""

    topic: str
    partition: int
    items: list[Record[T]] = field(default_factory=list)

    def __iter__(self) -> Iterator[Record[T]]:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    @property
    def last_offset(self) -> int:
        return self.items[-1].offset


class BatchingSink(ABC, Generic[T]):
    """Buffers items per partition; ``flush`` writes them through ``write`` with retries."""

    def __init__(self, config: SinkConfig | None = None, sleep: Callable[[float], None] = time.sleep) -> None:
        self.config = config or SinkConfig()
        self._sleep = sleep
        self._buffers: dict[TopicPartition, SinkBatch[T]] = {}
        self.retries = 0  # batch writes retried so far (the worker's engram_sink_retries_total)
        # CPU seconds the sink's own threads spent in flushes so far (its pool, if it has one); the
        # caller's thread time misses it (the worker's engram_stage_cpu_seconds_total{stage="sink:…"}).
        self.pool_cpu_s = 0.0

    def rides_out(self) -> bool:
        """Whether a flush that exhausted its retries is worth trying again later: a store that is
        down comes back. A sink whose last failure will not pass by waiting says no."""
        return True

    def setup(self) -> None:  # noqa: B027 - optional hook
        """Connect and verify with a cheap query. Called once before the first write."""

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and file handles."""

    @abstractmethod
    def write(self, batch: SinkBatch[T]) -> None:
        """Apply one batch idempotently, or raise a SinkError."""

    def add(self, item: Record[T]) -> None:
        tp = (item.topic, item.partition)
        batch = self._buffers.get(tp)
        if batch is None:
            batch = self._buffers[tp] = SinkBatch(item.topic, item.partition)
        batch.items.append(item)

    @property
    def pending(self) -> int:
        return sum(len(b) for b in self._buffers.values())

    def flush(self) -> dict[TopicPartition, int]:
        """Write every buffered batch (split at ``max_batch``); return the last offset per partition."""
        written: dict[TopicPartition, int] = {}
        for tp, batch in sorted(self._buffers.items()):
            for start in range(0, len(batch.items), self.config.max_batch):
                chunk = SinkBatch(batch.topic, batch.partition, batch.items[start : start + self.config.max_batch])
                self._write_with_retry(chunk)
                written[tp] = chunk.last_offset
        self._buffers.clear()
        return written

    def _write_with_retry(self, batch: SinkBatch[T]) -> None:
        delay = self.config.backoff_initial_s
        for attempt in range(self.config.max_retries + 1):
            try:
                self.write(batch)
                return
            except SinkBackpressureError as exc:
                wait = exc.retry_after
            except SinkTransientError:
                wait = delay
                delay = min(delay * 2, self.config.backoff_max_s)
            if attempt == self.config.max_retries:
                break
            self.retries += 1
            self._sleep(wait)
        msg = (
            f"{type(self).__name__}: batch {batch.topic}[{batch.partition}] up to offset {batch.last_offset} "
            f"failed after {self.config.max_retries} retries"
        )
        raise SinkRetriesExhaustedError(msg)
