"""Tunables of the event log, as a frozen config with named presets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

MIB: Final = 1024 * 1024


@dataclass(frozen=True, slots=True)
class EventLogConfig:
    """How segments are written.

    ``segment_bytes``: roll to a new segment before a batch once the active one has reached this
    size (bytes; a segment may exceed it by at most one batch). ``codec``: the OCF block codec
    ("null" or "deflate"; raw values are already compact Avro). ``fsync``: fsync every batch and
    checkpoint; only tests that measure nothing about durability turn it off.
    ``flush_threads``: partitions flushed at once by ``EventLogSink.flush``. Their fsyncs then
    overlap each other and the encoding of other partitions (the file system coalesces concurrent
    journal commits); 1 flushes partitions one after another.
    """

    segment_bytes: int = 64 * MIB
    codec: str = "null"
    fsync: bool = True
    flush_threads: int = 4

    def __post_init__(self) -> None:
        if self.segment_bytes <= 0:
            msg = f"segment_bytes must be positive, got {self.segment_bytes}"
            raise ValueError(msg)
        if self.flush_threads < 1:
            msg = f"flush_threads must be at least 1, got {self.flush_threads}"
            raise ValueError(msg)
        if self.codec not in {"null", "deflate"}:
            msg = f"unsupported codec {self.codec!r} (use 'null' or 'deflate')"
            raise ValueError(msg)


DEFAULT: Final = EventLogConfig()
"""Production: 64 MiB segments, no compression, fsync per batch."""

SMALL_SEGMENTS: Final = EventLogConfig(segment_bytes=1 * MIB)
"""Demo and tests: many small segments, so that rolling and segment search are exercised."""

COMPACT: Final = EventLogConfig(codec="deflate")
"""Less disk for long retention, at some CPU cost per batch."""
