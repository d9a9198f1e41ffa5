"""`engram replay` against the real (stand-in) broker: the right records, in order, once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import OFFSET_BEGINNING, NewTopic

from engram.infra.config import StackInfo
from engram.sinks.eventlog import SMALL_SEGMENTS, SegmentWriter
from engram.streams.cli import main
from engram.streams.profile import STANDIN
from tests.eventlog.records import events

pytestmark = pytest.mark.integration

SOURCE = "engram.turns"


def _log(root: Path) -> None:
    for partition, last in ((0, 59), (1, 39)):
        with SegmentWriter(root, SOURCE, partition, SMALL_SEGMENTS) as writer:
            for first in range(0, last + 1, 10):
                writer.append(events(first, min(first + 9, last), SOURCE, partition))


def _replay(
    bootstrap: str, log: Path, target: str, partitions: int, window: list[str], capsys: pytest.CaptureFixture[str]
) -> dict[str, object]:
    """Create ``target`` with ``partitions``, write the log under ``log``, replay ``window`` of it into
    ``target``; the command's JSON summary."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(target, partitions, 1)]).values():
        future.result(timeout=10)
    _log(log)
    argv = ["replay", "--log", str(log), "--topics", SOURCE, "--to", target, "--bootstrap", bootstrap, "--json"]
    assert main(argv + window) == 0
    summary: dict[str, object] = json.loads(capsys.readouterr().out)
    return summary


def _consume_all(bootstrap: str, topic: str, partitions: int) -> dict[int, list[tuple[bytes | None, bytes | None]]]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{topic}-reader", **STANDIN.client_settings("consumer")}
    )
    got: dict[int, list[tuple[bytes | None, bytes | None]]] = {p: [] for p in range(partitions)}
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        at_end: set[int] = set()
        for _ in range(200):
            if len(at_end) == partitions:
                break
            message = consumer.poll(0.5)
            if message is None:
                continue
            partition = message.partition()
            assert partition is not None
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                at_end.add(partition)
                continue
            got[partition].append((message.key(), message.value()))
    finally:
        consumer.close()
    return got


def test_replay_republishes_a_time_range_in_partition_order(
    stack: StackInfo, unique_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    target = f"{unique_name}-backfill"
    # Event times are BASE + offset seconds: this window is offsets 5 .. 44 of each partition.
    window = ["--since", "2026-01-01T00:00:05Z", "--until", "2026-01-01T00:00:45Z", "--rate", "5000"]
    summary = _replay(bootstrap, tmp_path, target, 2, window, capsys)
    assert (summary["read"], summary["delivered"], summary["failed"]) == (75, 75, 0)
    assert summary["keep_partitions"] is True

    got = _consume_all(bootstrap, target, 2)
    expected = {0: events(5, 44, SOURCE, 0), 1: events(5, 39, SOURCE, 1)}
    for partition, records in expected.items():
        assert got[partition] == [(r["key"], r["value"]) for r in records]


def test_replay_to_a_smaller_topic_hashes_keys_and_keeps_offset_range(
    stack: StackInfo, unique_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    target = f"{unique_name}-single"
    summary = _replay(bootstrap, tmp_path, target, 1, ["--from-offset", "30", "--to-offset", "49"], capsys)
    assert summary["keep_partitions"] is False
    assert summary["delivered"] == 30  # 30..49 of partition 0, 30..39 of partition 1

    (records,) = _consume_all(bootstrap, target, 1).values()
    expected = events(30, 49, SOURCE, 0) + events(30, 39, SOURCE, 1)
    assert sorted(records, key=repr) == sorted(((r["key"], r["value"]) for r in expected), key=repr)
    # Each source partition's records keep their order within the single target partition.
    for partition in (0, 1):
        mine = [
            value for _, value in records if value is not None and value.startswith(f"{SOURCE}/{partition}/".encode())
        ]
        assert mine == [r["value"] for r in events(30, 49 if partition == 0 else 39, SOURCE, partition)]
