"""On-disk layout of the event log: folders, segment names, and the per-partition checkpoint.

```
<root>/<topic>/<partition>/00000000000000001234.avro   one OCF segment, named by its first offset
<root>/<topic>/<partition>/checkpoint.json             the durable state of that partition
```

The checkpoint is the truth. It names the active (last) segment, how many of its bytes are
durable, and the last durable offset. It is replaced atomically (write a temporary file, fsync,
rename, fsync the folder), so a crash leaves either the old or the new checkpoint, never a mix.
Invariant: every segment's first offset is at most the last durable offset, so a segment file
named past it was created after the last checkpoint and holds nothing durable.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

SEGMENT_SUFFIX: Final = ".avro"
OFFSET_DIGITS: Final = 20
CHECKPOINT_NAME: Final = "checkpoint.json"
_SEGMENT_RE: Final = re.compile(r"^(\d{20})\.avro$")
# Kafka's own rule for topic names; it also keeps a topic from escaping the log's root folder.
_TOPIC_RE: Final = re.compile(r"^[A-Za-z0-9._-]{1,249}$")

NO_OFFSET: Final = -1
"""The last durable offset of a partition that has nothing durable yet."""


class EventLogError(Exception):
    """Base class of event-log failures."""


class EventLogCorruptError(EventLogError):
    """The files on disk contradict the checkpoint (lost bytes, or a missing checkpoint)."""


class InvalidTopicError(EventLogError, ValueError):
    """A topic name that Kafka would not accept, or that would leave the log's folder."""


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """Durable state of one partition. ``durable_bytes`` is the length of ``segment`` in bytes."""

    segment: str | None
    durable_bytes: int
    last_offset: int

    @classmethod
    def empty(cls) -> Checkpoint:
        return cls(segment=None, durable_bytes=0, last_offset=NO_OFFSET)


def validate_topic(topic: str) -> str:
    if not _TOPIC_RE.match(topic) or topic in {".", ".."}:
        msg = f"invalid topic name {topic!r}"
        raise InvalidTopicError(msg)
    return topic


def partition_dir(root: Path, topic: str, partition: int) -> Path:
    if partition < 0:
        msg = f"invalid partition {partition} for topic {topic!r}"
        raise EventLogError(msg)
    return root / validate_topic(topic) / str(partition)


def segment_name(first_offset: int) -> str:
    """``00000000000000001234.avro``: zero-padded so that names sort in offset order."""
    if first_offset < 0:
        msg = f"a segment cannot start at offset {first_offset}"
        raise EventLogError(msg)
    return f"{first_offset:0{OFFSET_DIGITS}d}{SEGMENT_SUFFIX}"


def segment_first_offset(name: str) -> int:
    match = _SEGMENT_RE.match(name)
    if match is None:
        msg = f"not a segment file name: {name!r}"
        raise EventLogError(msg)
    return int(match.group(1))


def list_segments(directory: Path) -> list[str]:
    """Segment file names in ``directory``, in offset order (other files are ignored)."""
    if not directory.is_dir():
        return []
    return sorted(entry.name for entry in os.scandir(directory) if _SEGMENT_RE.match(entry.name))


def list_topics(root: Path) -> list[str]:
    if not root.is_dir():
        return []
    return sorted(e.name for e in os.scandir(root) if e.is_dir() and _TOPIC_RE.match(e.name))


def list_partitions(root: Path, topic: str) -> list[int]:
    directory = root / validate_topic(topic)
    if not directory.is_dir():
        return []
    return sorted(int(e.name) for e in os.scandir(directory) if e.is_dir() and e.name.isdigit())


def read_checkpoint(directory: Path) -> Checkpoint | None:
    """The partition's checkpoint, or None when it has never been written."""
    path = directory / CHECKPOINT_NAME
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        msg = f"unreadable checkpoint {path}: {exc}"
        raise EventLogCorruptError(msg) from exc
    try:
        segment = raw["segment"]
        checkpoint = Checkpoint(
            segment=None if segment is None else str(segment),
            durable_bytes=int(raw["durable_bytes"]),
            last_offset=int(raw["last_offset"]),
        )
    except (KeyError, TypeError, ValueError) as exc:
        msg = f"malformed checkpoint {path}: {raw!r}"
        raise EventLogCorruptError(msg) from exc
    if checkpoint.segment is not None:
        segment_first_offset(checkpoint.segment)
    return checkpoint


def sync_file(fd: int) -> None:
    """Make a file's data (and its size) durable. ``fdatasync`` skips the timestamps that ``fsync``
    would also flush; where the platform lacks it, ``fsync``."""
    datasync = getattr(os, "fdatasync", None)
    if datasync is None:
        os.fsync(fd)
    else:
        datasync(fd)


def fsync_dir(directory: Path) -> None:
    """Make a rename or a new file in ``directory`` durable."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def write_checkpoint(
    directory: Path,
    checkpoint: Checkpoint,
    *,
    fsync: bool = True,
    before_sync: Callable[[], None] | None = None,
) -> None:
    """Atomically replace the partition's checkpoint: temporary file, fsync, rename, fsync folder.

    ``before_sync`` runs after the temporary file is written and before it is synced; the segment
    writer syncs the segment there. Both are durable before the rename, and a file system that
    commits them in one journal transaction (ext4's ordered mode does) saves a round trip.
    """
    body = json.dumps(
        {
            "segment": checkpoint.segment,
            "durable_bytes": checkpoint.durable_bytes,
            "last_offset": checkpoint.last_offset,
        },
        sort_keys=True,
    ).encode("utf-8")
    tmp = directory / (CHECKPOINT_NAME + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, body)
        if before_sync is not None:
            before_sync()
        if fsync:
            sync_file(fd)
    finally:
        os.close(fd)
    os.replace(tmp, directory / CHECKPOINT_NAME)
    if fsync:
        fsync_dir(directory)
