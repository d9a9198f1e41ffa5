"""``EventLogSink``: the event log behind the ``BatchingSink`` contract.

Items carry the raw message bytes as received (``SinkItem[bytes]``). Each batch of one
(topic, partition) becomes one fsynced OCF block followed by a checkpoint, so that ``flush``
returning means the batch is durable and the caller may commit its offsets (streams/commit.py).
Redelivered records (offset at or below the last durable one) are skipped, so a replay after a
crash neither loses nor duplicates anything.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

from schemas.records import LoggedEvent
from sinks.base import BatchingSink, SinkBatch, SinkConfig, SinkTransientError, TopicPartition
from sinks.eventlog.config import DEFAULT, EventLogConfig
from sinks.eventlog.layout import NO_OFFSET, partition_dir, read_checkpoint
from sinks.eventlog.segment import AppendResult, SegmentWriter

AppendObserver = Callable[[str, int, AppendResult], None]
"""Called after every durable append with (topic, partition, result); for metrics."""


class EventLogSink(BatchingSink[bytes]):
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
    ) -> None:
        super().__init__(sink_config, sleep)
        self.root = Path(root)
        self.log_config = config
        self._on_append = on_append
        self._writers: dict[TopicPartition, SegmentWriter] = {}

    def setup(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)

    def __enter__(self) -> EventLogSink:
        self.setup()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()

    def segment_writer(self, topic: str, partition: int) -> SegmentWriter:
        """The partition's writer, resumed from its checkpoint on first use."""
        key = (topic, partition)
        writer = self._writers.get(key)
        if writer is None:
            writer = SegmentWriter(self.root, topic, partition, self.log_config)
            writer.open()
            self._writers[key] = writer
        return writer

    def last_durable_offset(self, topic: str, partition: int) -> int:
        """The highest offset durable in the log, or -1 (``NO_OFFSET``); consume from this + 1.

        Reads the checkpoint without creating anything for a partition never written.
        """
        writer = self._writers.get((topic, partition))
        if writer is not None:
            return writer.last_durable_offset
        checkpoint = read_checkpoint(partition_dir(self.root, topic, partition))
        return NO_OFFSET if checkpoint is None else checkpoint.last_offset

    def write(self, batch: SinkBatch[bytes]) -> None:
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
        try:
            result = self.segment_writer(batch.topic, batch.partition).append(events)
        except OSError as exc:
            msg = f"event log write to {batch.topic}[{batch.partition}] failed: {exc}"
            raise SinkTransientError(msg) from exc
        if self._on_append is not None:
            self._on_append(batch.topic, batch.partition, result)
