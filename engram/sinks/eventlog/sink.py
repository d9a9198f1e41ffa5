"""``EventLogSink``: the event log behind the ``BatchingSink`` contract.

Items carry the raw message bytes as received (``Record[bytes | None]``, None for a tombstone). Each batch of one
(topic, partition) becomes one fsynced OCF block followed by a checkpoint, so that ``flush``
returning means the batch is durable and the caller may commit its offsets (streams/commit.py).
Redelivered records (offset at or below the last durable one) are skipped, so a replay after a
crash neither loses nor duplicates anything.

With a ``SealingPolicy`` (sinks/eventlog/sealed.py), the records that are not skipped are sealed
with their subject's key just before their block is written; without one, records are stored as
received.

``flush`` writes different partitions concurrently (``EventLogConfig.flush_threads``); each
partition still has one writer and keeps its order, and ``flush`` returns only when every
partition is durable. If any partition fails, ``flush`` raises and keeps the buffered items, so a
second ``flush`` rewrites only what is not durable yet (the rest is skipped as redelivered).
"""

from __future__ import annotations

import errno
import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Final

from engram.schemas.records import LoggedEvent
from engram.sinks.base import BatchingSink, SinkBatch, SinkConfig, SinkTransientError, TopicPartition
from engram.sinks.eventlog.config import DEFAULT, EventLogConfig
from engram.sinks.eventlog.layout import NO_OFFSET, partition_dir, read_checkpoint
from engram.sinks.eventlog.sealed import SealingPolicy
from engram.sinks.eventlog.segment import AppendResult, Opener, SegmentWriter, open_file

FULL_DISK: Final = frozenset({errno.ENOSPC, errno.EDQUOT})

AppendObserver = Callable[[str, int, AppendResult], None]
"""Called after every durable append with (topic, partition, result); for metrics."""


class EventLogSink(BatchingSink[bytes | None]):
    """Archives raw records to ``<root>/<topic>/<partition>/`` segments.

    ``config`` tunes the segments; ``sink_config`` the batching and retries of ``BatchingSink``.
    An ``OSError`` while writing is reported as ``SinkTransientError``: the partition's writer
    reopens from its checkpoint (dropping the torn tail) before the retry.
    """

    def __init__(
        self,
        root: Path | str,
        config: EventLogConfig = DEFAULT,
        sink_config: SinkConfig | None = None,
        *,
        on_append: AppendObserver | None = None,
        sleep: Callable[[float], None] = time.sleep,
        sealing: SealingPolicy | None = None,
        opener: Opener = open_file,
    ) -> None:
        super().__init__(sink_config, sleep)
        self.opener = opener
        self.full = False  # the last write failed for lack of space (`rides_out`)
        self.root = Path(root)
        self.log_config = config
        self.sealing = sealing
        self._on_append = on_append
        self._writers: dict[TopicPartition, SegmentWriter] = {}
        self._pool: ThreadPoolExecutor | None = None

    def setup(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        if self.sealing is not None:
            self.sealing.keys.setup()

    def __enter__(self) -> EventLogSink:
        self.setup()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def flush(self) -> dict[TopicPartition, int]:
        """Write every buffered partition, several at once; return the last offset per partition."""
        if len(self._buffers) <= 1 or self.log_config.flush_threads == 1:
            return super().flush()
        for tp in self._buffers:
            self.segment_writer(*tp)  # open (resume) writers here, not concurrently
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.log_config.flush_threads, thread_name_prefix="eventlog-flush")
        futures: dict[TopicPartition, Future[tuple[int, float]]] = {
            tp: self._pool.submit(self._timed_flush, batch) for tp, batch in sorted(self._buffers.items())
        }
        written: dict[TopicPartition, int] = {}
        failure: BaseException | None = None
        for tp, future in futures.items():
            try:
                written[tp], cpu_s = future.result()
                self.pool_cpu_s += cpu_s
            except BaseException as exc:  # every partition is awaited before one failure is raised
                failure = failure or exc
        if failure is not None:
            raise failure
        self._buffers.clear()
        return written

    def _timed_flush(self, batch: SinkBatch[bytes | None]) -> tuple[int, float]:
        """`_flush_partition` on a pool thread, with the CPU time it took there."""
        started = time.thread_time()
        last = self._flush_partition(batch)
        return last, time.thread_time() - started

    def _flush_partition(self, batch: SinkBatch[bytes | None]) -> int:
        step = self.config.max_batch
        for start in range(0, len(batch.items), step):
            self._write_with_retry(SinkBatch(batch.topic, batch.partition, batch.items[start : start + step]))
        return batch.last_offset

    def segment_writer(self, topic: str, partition: int) -> SegmentWriter:
        """The partition's writer, resumed from its checkpoint on first use."""
        key = (topic, partition)
        writer = self._writers.get(key)
        if writer is None:
            writer = SegmentWriter(self.root, topic, partition, self.log_config, self.opener)
            writer.open()
            self._writers[key] = writer
        return writer

    def rides_out(self) -> bool:
        """A full disk passes (space is freed, the disk grows): worth waiting for. Any other
        failure (a folder that cannot be written, a corrupt segment) is not, and stops the worker
        unacknowledged at once."""
        return self.full

    def last_durable_offset(self, topic: str, partition: int) -> int:
        """The highest offset durable in the log, or -1 (``NO_OFFSET``); consume from this + 1.

        Reads the checkpoint without creating anything for a partition never written.
        """
        writer = self._writers.get((topic, partition))
        if writer is not None:
            return writer.last_durable_offset
        checkpoint = read_checkpoint(partition_dir(self.root, topic, partition))
        return NO_OFFSET if checkpoint is None else checkpoint.last_offset

    def write(self, batch: SinkBatch[bytes | None]) -> None:
        events: list[LoggedEvent] = [
            {
                "topic": item.topic,
                "partition": item.partition,
                "offset": item.offset,
                "timestamp_ms": item.timestamp_ms,
                "key": item.key,
                "value": item.value,
            }
            for item in batch.items
        ]
        prepare = None if self.sealing is None else self.sealing.seal
        try:
            result = self.segment_writer(batch.topic, batch.partition).append(events, prepare)
        except OSError as exc:
            self.full = exc.errno in FULL_DISK
            msg = f"event log write to {batch.topic}[{batch.partition}] failed: {exc}"
            raise SinkTransientError(msg) from exc
        self.full = False
        if self._on_append is not None:
            self._on_append(batch.topic, batch.partition, result)
