"""Property: any batching and any crash points give exactly the input once, in per-partition order."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import engram.sinks.eventlog.segment as segment_module
from engram.schemas.records import LoggedEvent
from engram.sinks.eventlog import EventLogConfig, EventLogReader, SegmentWriter
from tests.eventlog.records import events

TOPIC = "engram.turns"
# fsync is what makes bytes survive a real power cut; this test simulates process crashes, so it
# checks the protocol with fsync off to stay fast. Small segments make it cross rolls.
CONFIG = EventLogConfig(segment_bytes=1_500, fsync=False)


class Crash(BaseException):
    """The process dies at this point."""


def _crashing_checkpoint(torn_bytes: int) -> object:
    def crash(directory: Path, *_args: object, **_kwargs: object) -> None:
        # Optionally leave part of a further block behind, as a torn write would.
        active = sorted(directory.glob("*.avro"))[-1]
        with active.open("ab") as handle:
            handle.write(b"\x02\x80" * torn_bytes)
        raise Crash

    return crash


@settings(max_examples=40, deadline=None)
@given(
    total=st.integers(min_value=1, max_value=120),
    batch_sizes=st.lists(st.integers(min_value=1, max_value=30), min_size=1, max_size=12),
    crashes=st.lists(st.tuples(st.integers(0, 40), st.integers(0, 10), st.integers(0, 20)), max_size=4),
)
def test_crashes_and_redelivery_lose_and_duplicate_nothing(
    total: int, batch_sizes: list[int], crashes: list[tuple[int, int, int]]
) -> None:
    source = events(0, total - 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        _consume(root, source, batch_sizes, dict((at, (rewind, torn)) for at, rewind, torn in crashes))
        got: list[LoggedEvent] = list(EventLogReader(root).read_partition(TOPIC, 0))
    assert got == source


def _consume(
    root: Path, source: list[LoggedEvent], batch_sizes: list[int], crashes: dict[int, tuple[int, int]]
) -> None:
    """A consumer that crashes at the given batch numbers and restarts ``rewind`` records before
    its log's durable offset (a redelivery), until the whole source is logged."""
    position = 0
    batch_number = 0
    writer = SegmentWriter(root, TOPIC, 0, CONFIG)
    try:
        while position < len(source):
            size = batch_sizes[batch_number % len(batch_sizes)]
            batch = source[position : position + size]
            crash = crashes.pop(batch_number, None)
            batch_number += 1
            if crash is None or batch[-1]["offset"] <= writer.last_durable_offset:
                # No crash here, or a batch of redelivered records only (nothing to write, so
                # nothing to crash in).
                writer.append(batch)
                position += len(batch)
                continue
            rewind, torn = crash
            with pytest.MonkeyPatch.context() as patched:
                patched.setattr(segment_module, "write_checkpoint", _crashing_checkpoint(torn))
                with pytest.raises(Crash):
                    writer.append(batch)
            writer.close()
            writer = SegmentWriter(root, TOPIC, 0, CONFIG)  # a new process
            position = max(writer.last_durable_offset + 1 - rewind, 0)
    finally:
        writer.close()
