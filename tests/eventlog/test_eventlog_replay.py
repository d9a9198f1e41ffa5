"""The replay command's pure parts: time and offset ranges, the rate limiter, the produce loop."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import pytest

from engram.sinks.eventlog import (
    LogRange,
    ReplayRangeError,
    Republisher,
    SegmentWriter,
    TokenBucket,
    keeps_partitions,
    parse_instant,
    replay_range,
)
from engram.streams.commands import replay as replay_command
from tests.eventlog.records import BASE_MS, events


class VirtualClock:
    def __init__(self) -> None:
        self.now = 100.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_token_bucket_holds_the_rate_after_the_burst() -> None:
    clock = VirtualClock()
    bucket = TokenBucket(50, burst=5, clock=clock, sleep=clock.sleep)
    for _ in range(105):
        bucket.acquire()
    # 5 free from the full bucket, then 100 at 50/s: two seconds of virtual time.
    assert clock.now - 100.0 == pytest.approx(2.0)


def test_token_bucket_refills_while_idle_but_not_past_the_burst() -> None:
    clock = VirtualClock()
    bucket = TokenBucket(10, burst=3, clock=clock, sleep=clock.sleep)
    assert all(bucket.try_acquire() for _ in range(3))
    assert not bucket.try_acquire()
    clock.now += 60  # a long pause earns only a burst
    assert sum(bucket.try_acquire() for _ in range(10)) == 3


def test_token_bucket_rejects_nonsense() -> None:
    with pytest.raises(ValueError, match="positive"):
        TokenBucket(0)
    with pytest.raises(ValueError, match="at once"):
        TokenBucket(10, burst=2).acquire(3)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-01-01T00:00:00Z", BASE_MS),
        ("2026-01-01T01:00:00+01:00", BASE_MS),
        ("2026-01-01T00:00:01.5", BASE_MS + 1500),  # no offset: UTC
        ("2026-01-01", BASE_MS),
        (str(BASE_MS), BASE_MS),
    ],
)
def test_parse_instant_is_utc(text: str, expected: int) -> None:
    assert parse_instant(text) == expected


def test_replay_range_validates() -> None:
    window = replay_range(from_offset=3, to_offset=9, since="2026-01-01T00:00:00Z", until="2026-01-02T00:00:00Z")
    assert window == LogRange(3, 9, BASE_MS, BASE_MS + 86_400_000)
    with pytest.raises(ReplayRangeError, match="not an ISO"):
        replay_range(since="yesterday")
    with pytest.raises(ReplayRangeError, match="after"):
        replay_range(from_offset=9, to_offset=3)
    with pytest.raises(ReplayRangeError, match=">= 0"):
        replay_range(from_offset=-1)
    with pytest.raises(ReplayRangeError, match="not before"):
        replay_range(since="2026-01-02", until="2026-01-01")


def test_partitions_are_kept_only_when_the_target_has_them_all() -> None:
    assert keeps_partitions({0, 1, 2}, 3)
    assert not keeps_partitions({0, 1, 2}, 2)
    assert keeps_partitions(set(), 1)


class FakeProducer:
    """Records produce calls; the first ``full`` calls raise BufferError like a full queue."""

    def __init__(self, full: int = 0, fail_offsets: frozenset[bytes] = frozenset()) -> None:
        self.produced: list[dict[str, Any]] = []
        self.pending: list[tuple[Any, bytes]] = []
        self.full = full
        self.fail_values = fail_offsets
        self.polls = 0

    def produce(self, topic: str, *args: Any, **kwargs: Any) -> None:
        if self.full:
            self.full -= 1
            raise BufferError
        self.produced.append({"topic": topic, **kwargs})
        self.pending.append((kwargs["on_delivery"], kwargs["value"]))

    def poll(self, timeout: float = 0.0, /) -> int:
        self.polls += 1
        return self._deliver()

    def flush(self, timeout: float = 0.0, /) -> int:
        self._deliver()
        return 0

    def _deliver(self) -> int:
        served = len(self.pending)
        for callback, value in self.pending:
            callback("broker said no" if value in self.fail_values else None, None)
        self.pending.clear()
        return served


def test_republisher_keeps_order_partition_key_value_and_time() -> None:
    source = events(0, 4) + events(0, 2, partition=1)
    producer = FakeProducer(full=2)
    summary = Republisher(producer, "engram.turns.backfill", keep_partitions=True).run(source)
    assert [(m["partition"], m["value"]) for m in producer.produced] == [(e["partition"], e["value"]) for e in source]
    assert [m["key"] for m in producer.produced] == [e["key"] for e in source]
    assert [m["timestamp"] for m in producer.produced] == [e["timestamp_ms"] for e in source]
    assert {m["topic"] for m in producer.produced} == {"engram.turns.backfill"}
    assert (summary.read, summary.produced, summary.delivered, summary.failed) == (8, 8, 8, 0)
    assert summary.per_source == {"engram.turns[0]": 5, "engram.turns[1]": 3}


def test_republisher_leaves_partitioning_to_the_key_hash_and_counts_failures() -> None:
    source = events(0, 3)
    bad = source[2]["value"]
    assert bad is not None
    producer = FakeProducer(fail_offsets=frozenset({bad}))
    summary = Republisher(producer, "t", keep_partitions=False).run(source)
    assert all("partition" not in m for m in producer.produced)
    assert (summary.delivered, summary.failed, summary.first_error) == (3, 1, "broker said no")


def test_republisher_is_rate_limited() -> None:
    clock = VirtualClock()
    bucket = TokenBucket(100, burst=1, clock=clock, sleep=clock.sleep)
    Republisher(FakeProducer(), "t", keep_partitions=True, rate_limit=bucket).run(events(0, 200))
    assert clock.now - 100.0 == pytest.approx(2.0)


def test_replay_command_rejects_bad_ranges_before_touching_kafka(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with SegmentWriter(tmp_path, "engram.turns", 0) as writer:
        writer.append(events(0, 3))
    parser = argparse.ArgumentParser()
    replay_command.register(parser.add_subparsers())
    args = parser.parse_args(
        ["replay", "--log", str(tmp_path), "--topics", "engram.turns", "--to", "x", "--bootstrap", "127.0.0.1:1"]
        + ["--since", "2026-02-01", "--until", "2026-01-01"]
    )
    assert args.func(args) == 2
    assert "not before" in capsys.readouterr().err
