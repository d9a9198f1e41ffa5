"""EventLogSink: the BatchingSink contract over the event log, retries and resume included."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import engram.sinks.eventlog.segment as segment_module
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import LoggedEvent
from engram.sinks.base import SinkConfig, SinkRetriesExhaustedError
from engram.sinks.eventlog import NO_OFFSET, AppendResult, EventLogSink
from engram.sinks.eventlog.layout import sync_file as real_sync
from engram.streams.commit import Batch, CommitTargets, commit_batch
from engram.streams.metrics import EngramMetrics
from tests.eventlog.records import events, logged

TOPIC = "engram.turns"


def _item(record: LoggedEvent) -> Record[bytes]:
    value = record["value"]
    assert value is not None
    return Record(record["topic"], record["partition"], record["offset"], record["timestamp_ms"], record["key"], value)


def test_flush_makes_batches_durable_and_reports_offsets(tmp_path: Path) -> None:
    seen: list[tuple[str, int, AppendResult]] = []
    with EventLogSink(
        tmp_path, sink_config=SinkConfig(max_batch=4), on_append=lambda t, p, r: seen.append((t, p, r))
    ) as sink:
        assert sink.last_durable_offset(TOPIC, 0) == NO_OFFSET
        assert not (tmp_path / TOPIC).exists()  # asking does not create anything
        for record in events(0, 9) + events(0, 2, partition=1):
            sink.add(_item(record))
        assert sink.flush() == {(TOPIC, 0): 9, (TOPIC, 1): 2}
        assert (sink.last_durable_offset(TOPIC, 0), sink.last_durable_offset(TOPIC, 1)) == (9, 2)
    # Partitions flush concurrently; each one's batches stay in order.
    assert [r.written for _, p, r in seen if p == 0] == [4, 4, 2]
    assert [r.written for _, p, r in seen if p == 1] == [3]
    assert logged(tmp_path) == events(0, 9)
    assert logged(tmp_path, partition=1) == events(0, 2, partition=1)
    # A new process sees the same durable offsets from the checkpoints alone.
    assert EventLogSink(tmp_path).last_durable_offset(TOPIC, 0) == 9


def test_redelivery_after_restart_adds_nothing_twice(tmp_path: Path) -> None:
    with EventLogSink(tmp_path) as sink:
        for record in events(0, 49):
            sink.add(_item(record))
        sink.flush()
    with EventLogSink(tmp_path) as sink:
        for record in events(30, 79):  # the consumer's last commit was at 30
            sink.add(_item(record))
        sink.flush()
    assert logged(tmp_path) == events(0, 79)


def test_a_failed_fsync_is_retried_without_duplicates(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_fsync = os.fsync
    failures = [OSError(5, "Input/output error")]

    def flaky_fsync(fd: int) -> None:
        if failures:
            raise failures.pop()
        real_fsync(fd)

    sleeps: list[float] = []
    with EventLogSink(tmp_path, sleep=sleeps.append) as sink:
        for record in events(0, 9):
            sink.add(_item(record))
        sink.flush()
        monkeypatch.setattr(os, "fsync", flaky_fsync)
        for record in events(10, 19):
            sink.add(_item(record))
        assert sink.flush() == {(TOPIC, 0): 19}
    assert len(sleeps) == 1  # one backoff, then the retry succeeded
    assert logged(tmp_path) == events(0, 19)


def test_one_failing_partition_fails_the_flush_and_a_second_flush_repairs_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def sync_all_but_partition_1(fd: int) -> None:
        if "/engram.turns/1/" in os.readlink(f"/proc/self/fd/{fd}"):
            raise OSError(28, "No space left on device")
        real_sync(fd)

    with EventLogSink(tmp_path, sink_config=SinkConfig(max_retries=1), sleep=lambda _s: None) as sink:
        for record in events(0, 9) + events(0, 9, partition=1):
            sink.add(_item(record))
        with monkeypatch.context() as patched:
            patched.setattr(segment_module, "sync_file", sync_all_but_partition_1)
            with pytest.raises(SinkRetriesExhaustedError, match=r"engram.turns\[1\]"):
                sink.flush()
        assert (sink.last_durable_offset(TOPIC, 0), sink.last_durable_offset(TOPIC, 1)) == (9, NO_OFFSET)
        assert sink.pending == 20  # nothing acknowledged is dropped
        assert sink.flush() == {(TOPIC, 0): 9, (TOPIC, 1): 9}
    assert logged(tmp_path) == events(0, 9)
    assert logged(tmp_path, partition=1) == events(0, 9, partition=1)


def test_the_cpu_a_concurrent_flush_spends_on_its_pool_threads_is_counted_under_the_sink(tmp_path: Path) -> None:
    """Partitions flush on the sink's own threads, which the caller's thread time does not see:
    the commit adds their CPU to ``engram_stage_cpu_seconds_total{stage="sink:eventlog"}``, so the
    ingest bench's CPU budget names it instead of leaving it under "other"."""
    payload = os.urandom(2048)
    raw: list[RawRecord] = [Record(TOPIC, p, n, n, b"ada", payload) for p in range(4) for n in range(1500)]
    metrics = EngramMetrics()
    with EventLogSink(tmp_path, sink_config=SinkConfig(max_batch=500)) as sink:
        asyncio.run(commit_batch(Batch(archive=raw), CommitTargets(eventlog=sink, metrics=metrics)))
        pooled = sink.pool_cpu_s
    counted = metrics.registry.get_sample_value("engram_stage_cpu_seconds_total", {"stage": "sink:eventlog"})
    assert pooled > 0.0 and counted is not None and counted >= pooled
    assert [len(logged(tmp_path, partition=p)) for p in range(4)] == [1500] * 4
    with EventLogSink(tmp_path) as single:  # one partition flushes on the caller's thread: no pool time
        single.add(Record(TOPIC, 0, 1500, 1500, b"ada", payload))
        single.flush()
        assert single.pool_cpu_s == 0.0
