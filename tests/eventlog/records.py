"""Builders of logged records for the event-log tests."""

from __future__ import annotations

from pathlib import Path

from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog import EventLogReader

BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def event(offset: int, topic: str = "engram.turns", partition: int = 0, ts_step_ms: int = 1000) -> LoggedEvent:
    """A record whose key, value and time are functions of its coordinates, so duplicates show."""
    return {
        "topic": topic,
        "partition": partition,
        "offset": offset,
        "timestamp_ms": BASE_MS + offset * ts_step_ms,
        "key": f"user-{offset % 7}".encode(),
        "value": f"{topic}/{partition}/{offset}:".encode() + bytes(range(offset % 50)),
    }


def events(first: int, last: int, topic: str = "engram.turns", partition: int = 0) -> list[LoggedEvent]:
    """Records with offsets ``first`` .. ``last`` inclusive."""
    return [event(o, topic, partition) for o in range(first, last + 1)]


def logged(root: Path, topic: str = "engram.turns", partition: int = 0) -> list[LoggedEvent]:
    return list(EventLogReader(root).read_partition(topic, partition))


def offsets(records: list[LoggedEvent]) -> list[int]:
    return [r["offset"] for r in records]
