"""``SegmentWriter``: appends the records of one topic partition to OCF segments, durably.

Per batch: filter out offsets already durable, roll to a new segment when the active one is full,
write the batch as one OCF block, fsync the segment, then atomically replace the checkpoint
(segment name, durable byte length, last offset). On open, resume from the checkpoint: truncate a
torn tail of the active segment back to its durable length, remove segment files created after
the last checkpoint (they hold no durable record), and never touch any other byte.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Final, cast

from fastavro.write import Writer

from engram.schemas.codec import parsed_schema
from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog.config import DEFAULT, EventLogConfig
from engram.sinks.eventlog.layout import (
    Checkpoint,
    EventLogCorruptError,
    EventLogError,
    fsync_dir,
    list_segments,
    partition_dir,
    read_checkpoint,
    segment_first_offset,
    segment_name,
    sync_file,
    write_checkpoint,
)

Opener = Callable[[Path, str], BinaryIO]
"""How a segment file is opened (path, mode): ``Path.open`` unless a test injects faults (a full
disk that fails a write part-way: tests/eventlog/test_disk_pressure.py)."""


def open_file(path: Path, mode: str) -> BinaryIO:
    return cast(BinaryIO, path.open(mode))


# Blocks are cut by us, one per batch, never by fastavro's size trigger.
_NEVER_SYNC: Final = 1 << 40

Prepare = Callable[[list[LoggedEvent]], list[LoggedEvent]]


@dataclass(frozen=True, slots=True)
class AppendResult:
    """What one ``append`` did. ``bytes_written`` counts segment bytes; ``seconds`` is wall time;
    ``new_segment``: the block started a segment."""

    written: int
    skipped: int
    bytes_written: int
    last_offset: int
    seconds: float
    new_segment: bool = False


class SegmentWriter:
    """The single writer of ``<root>/<topic>/<partition>/``. Not thread-safe; one per partition."""

    def __init__(
        self, root: Path | str, topic: str, partition: int, config: EventLogConfig = DEFAULT, opener: Opener = open_file
    ) -> None:
        self.opener = opener
        self.topic = topic
        self.partition = partition
        self.config = config
        self.directory = partition_dir(Path(root), topic, partition)
        self._checkpoint: Checkpoint | None = None
        self._file: BinaryIO | None = None
        self._writer: Writer | None = None

    @property
    def checkpoint(self) -> Checkpoint:
        """The durable state; opens (and so resumes) the partition on first use."""
        if self._checkpoint is None:
            self._checkpoint = self._resume()
        return self._checkpoint

    @property
    def last_durable_offset(self) -> int:
        return self.checkpoint.last_offset

    def open(self) -> Checkpoint:
        return self.checkpoint

    def __enter__(self) -> SegmentWriter:
        self.open()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._close_file()
        self._checkpoint = None

    def append(self, events: Iterable[LoggedEvent], prepare: Prepare | None = None) -> AppendResult:
        """Append records in offset order; offsets at or below the last durable one are skipped.

        ``prepare`` turns the records that are not skipped into the records stored (the sink
        seals them there), keeping their offsets."""
        started = time.perf_counter()
        checkpoint = self.checkpoint
        fresh, skipped = self._fresh(events, checkpoint.last_offset)
        if not fresh:
            return AppendResult(0, skipped, 0, checkpoint.last_offset, time.perf_counter() - started)
        if prepare is not None:
            fresh = prepare(fresh)
        try:
            written_bytes = self._write_block(checkpoint, fresh)
        except BaseException:
            # Whatever reached the file past the checkpoint is a torn tail: drop the handle so the
            # next append resumes from the checkpoint and truncates it.
            self.close()
            raise
        rolled = self.checkpoint.segment != checkpoint.segment
        seconds = time.perf_counter() - started
        return AppendResult(len(fresh), skipped, written_bytes, fresh[-1]["offset"], seconds, rolled)

    def _fresh(self, events: Iterable[LoggedEvent], last_offset: int) -> tuple[list[LoggedEvent], int]:
        fresh: list[LoggedEvent] = []
        skipped = 0
        prev = last_offset
        for event in events:
            if event["topic"] != self.topic or event["partition"] != self.partition:
                msg = f"record of {event['topic']}[{event['partition']}] sent to {self.topic}[{self.partition}]"
                raise EventLogError(msg)
            offset = event["offset"]
            if offset <= prev:
                skipped += 1
                continue
            fresh.append(event)
            prev = offset
        return fresh, skipped

    def _write_block(self, checkpoint: Checkpoint, fresh: list[LoggedEvent]) -> int:
        if self._file is None or self._writer is None or checkpoint.durable_bytes >= self.config.segment_bytes:
            handle, writer = self._roll(fresh[0]["offset"])
        else:
            handle, writer = self._file, self._writer
        # fastavro types records as plain dicts; a TypedDict is one at run time.
        write = cast(Callable[[LoggedEvent], None], writer.write)
        for event in fresh:
            write(event)
        writer.flush()
        size = handle.tell()
        segment = Path(handle.name).name
        before = checkpoint.durable_bytes if segment == checkpoint.segment else 0
        updated = Checkpoint(segment=segment, durable_bytes=size, last_offset=fresh[-1]["offset"])

        def sync_segment() -> None:
            sync_file(handle.fileno())

        # The segment's bytes are synced before the checkpoint that vouches for them is renamed
        # into place (see write_checkpoint).
        write_checkpoint(
            self.directory, updated, fsync=self.config.fsync, before_sync=sync_segment if self.config.fsync else None
        )
        self._checkpoint = updated
        return size - before

    def _roll(self, first_offset: int) -> tuple[BinaryIO, Writer]:
        self._close_file()
        path = self.directory / segment_name(first_offset)
        # "x": a segment is created once and never overwritten.
        handle = self.opener(path, "xb")
        writer = Writer(
            handle,
            parsed_schema("LoggedEvent"),
            codec=self.config.codec,
            sync_interval=_NEVER_SYNC,
            metadata={"engram.topic": self.topic, "engram.partition": str(self.partition)},
        )
        self._file, self._writer = handle, writer
        return handle, writer

    def _close_file(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file = None
        self._writer = None

    def _resume(self) -> Checkpoint:
        self.directory.mkdir(parents=True, exist_ok=True)
        checkpoint = read_checkpoint(self.directory)
        segments = list_segments(self.directory)
        if checkpoint is None:
            if segments:
                msg = f"{self.directory} has segments but no checkpoint; refusing to guess what is durable"
                raise EventLogCorruptError(msg)
            checkpoint = Checkpoint.empty()
            write_checkpoint(self.directory, checkpoint, fsync=self.config.fsync)
            return checkpoint
        self._discard_after(checkpoint, segments)
        if checkpoint.segment is not None:
            self._reopen_active(self.directory / checkpoint.segment, checkpoint.durable_bytes)
        return checkpoint

    def _discard_after(self, checkpoint: Checkpoint, segments: list[str]) -> None:
        """Remove segments created after the checkpoint: each starts past the last durable offset."""
        removed = False
        for name in segments:
            if checkpoint.segment is not None and name <= checkpoint.segment:
                continue
            if segment_first_offset(name) <= checkpoint.last_offset:
                msg = f"{self.directory / name} starts at or before durable offset {checkpoint.last_offset}"
                raise EventLogCorruptError(msg)
            (self.directory / name).unlink()
            removed = True
        if removed and self.config.fsync:
            fsync_dir(self.directory)

    def _reopen_active(self, path: Path, durable_bytes: int) -> None:
        try:
            size = path.stat().st_size
        except FileNotFoundError as exc:
            msg = f"checkpointed segment {path} is missing"
            raise EventLogCorruptError(msg) from exc
        if size < durable_bytes:
            msg = f"{path} has {size} bytes but {durable_bytes} were made durable"
            raise EventLogCorruptError(msg)
        if size > durable_bytes:
            os.truncate(path, durable_bytes)
        handle = self.opener(path, "a+b")
        if self.config.fsync and size > durable_bytes:
            os.fsync(handle.fileno())
        handle.seek(0, os.SEEK_END)
        # On a non-empty file opened for append, fastavro reads the header (schema, sync marker)
        # and writes with the file's schema, dropping fields it lacks (a seal, say). A segment
        # written with an older LoggedEvent is therefore left as it is: the next batch rolls.
        writer = Writer(handle, parsed_schema("LoggedEvent"), codec=self.config.codec, sync_interval=_NEVER_SYNC)
        if _field_names(writer.schema) != _field_names(parsed_schema("LoggedEvent")):
            handle.close()
            return
        self._file, self._writer = handle, writer


def _field_names(schema: object) -> list[str]:
    fields = schema.get("fields", []) if isinstance(schema, dict) else []
    return [str(field["name"]) for field in fields]
