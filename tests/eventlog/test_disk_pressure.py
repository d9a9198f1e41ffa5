"""A full disk under the event log (issue 19): ingest holds its batch unacknowledged while writes
fail with ENOSPC, goes on when space returns, and the log ends with every record once, readable.

The file layer is a fault-injecting one (`FullDisk`): while the disk is full, each write lets the
first half of its bytes through and then fails, the way a filesystem that runs out of space
mid-block does, so the torn tail is real and the writer's rollback to its checkpoint is exercised.
"""

from __future__ import annotations

import asyncio
import errno
from pathlib import Path
from typing import Any, BinaryIO, cast

from engram.schemas.record import RawRecord, Record
from engram.sinks.base import SinkConfig
from engram.sinks.eventlog import SMALL_SEGMENTS, EventLogReader, EventLogSink
from engram.streams.commit import Batch, CommitTargets, OutagePolicy, commit_batch
from engram.streams.metrics import EngramMetrics

TOPIC = "engram.turns"


class FullDisk:
    """Opens segment files whose writes fail with ENOSPC while ``full`` (after a partial write)."""

    def __init__(self) -> None:
        self.full = False
        self.failures = 0

    def open(self, path: Path, mode: str) -> BinaryIO:
        return cast(BinaryIO, _Handle(cast(BinaryIO, path.open(mode)), self))


class _Handle:
    def __init__(self, inner: BinaryIO, disk: FullDisk) -> None:
        self._inner = inner
        self._disk = disk

    def write(self, data: bytes) -> int:
        if not self._disk.full:
            return self._inner.write(data)
        self._inner.write(bytes(data)[: len(data) // 2])
        self._inner.flush()
        self._disk.failures += 1
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def records(first: int, count: int) -> list[RawRecord]:
    return [Record(TOPIC, 0, n, 1_000 + n, b"ada", f"turn {n} ".encode() * 20) for n in range(first, first + count)]


def test_a_full_disk_holds_ingest_unacknowledged_and_loses_nothing(tmp_path: Path) -> None:
    disk = FullDisk()
    sink = EventLogSink(
        tmp_path, SMALL_SEGMENTS, SinkConfig(max_batch=40, max_retries=2, backoff_initial_s=0.0), opener=disk.open,
        sleep=lambda _s: None,
    )  # fmt: skip
    sink.setup()
    metrics = EngramMetrics()
    targets = CommitTargets(eventlog=sink, metrics=metrics, outage=OutagePolicy(60.0, 0.02, 0.05))
    acknowledged: list[int] = []

    def acknowledge(n: int) -> Any:
        async def ack() -> None:
            acknowledged.append(n)

        return ack

    def up() -> float | None:
        return metrics.registry.get_sample_value("engram_store_up", {"sink": "eventlog"})

    async def scenario() -> None:
        await commit_batch(Batch(archive=records(0, 100)), targets, acknowledge(1))
        disk.full = True
        held = asyncio.create_task(commit_batch(Batch(archive=records(100, 100)), targets, acknowledge(2)))
        await asyncio.sleep(0.5)
        assert not held.done() and acknowledged == [1]  # no acknowledgement: the broker keeps the backlog
        assert disk.failures >= 3 and up() == 0
        disk.full = False
        await asyncio.wait_for(held, 10.0)
        assert acknowledged == [1, 2] and up() == 1
        # The batch again (a worker killed before its acknowledgement reached the broker): skipped.
        await commit_batch(Batch(archive=records(100, 100)), targets, acknowledge(3))

    try:
        asyncio.run(scenario())
    finally:
        sink.close()
    offsets = [event["offset"] for event in EventLogReader(tmp_path).read([TOPIC])]
    assert offsets == list(range(200))
