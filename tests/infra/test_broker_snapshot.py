"""A stack that keeps its data (issue 48, item 5): what the in-memory broker held comes back after
a stop and a start, exactly: every record at its offset with its timestamp, key, value and
headers (null keys and values, a record over 1 MB, an empty partition), each topic's partition
count and configs, and every group's committed offsets. And as a user runs it: `engram up`,
`engram down`, `engram up` keeps a topic's records and FalkorDB's graph; `up --no-keep` starts empty.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import falkordb
import pytest
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.cimpl import NewTopic

from engram.infra.broker_snapshot import BrokerSnapshotError, has_snapshot
from engram.infra.config import StackConfig
from engram.infra.launcher import EmbeddedStack

pytestmark = pytest.mark.integration

Contents = dict[tuple[str, int], list[tuple[int, int, bytes | None, bytes | None, list[tuple[str, bytes | None]]]]]
TOPICS = {"engram.a": 3, "engram.empty": 1, "engram.a-changelog": 2}
GROUPS = {"worker": [("engram.a", 0, 4), ("engram.a", 2, 1)], "client": [("engram.a-changelog", 1, 3)]}
LARGE = 2 * 1024 * 1024


def fill(bootstrap: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    configs = {"engram.a-changelog": {"cleanup.policy": "compact"}}
    new = [NewTopic(name, count, 1, config=configs.get(name, {})) for name, count in TOPICS.items()]
    for future in admin.create_topics(new).values():
        future.result(timeout=10)
    producer = Producer({"bootstrap.servers": bootstrap, "enable.idempotence": False, "message.max.bytes": 3 * LARGE})
    for i in range(60):
        key = None if i % 7 == 0 else f"user-{i % 5}".encode()
        value = None if i % 11 == 0 else f"value {i}".encode()
        headers: list[tuple[str, str | bytes | None]] | None = [("h", b"x"), ("n", None)] if i % 3 == 0 else None
        producer.produce("engram.a", value, key, i % 3, timestamp=1_700_000_000_000 + i, headers=headers)
    producer.produce("engram.a-changelog", b"s" * LARGE, b"big", 0)
    for i in range(5):
        producer.produce("engram.a-changelog", f"state {i}".encode(), b"k", 1)
    assert producer.flush(10) == 0
    for group, offsets in GROUPS.items():
        tps = [TopicPartition(t, p, o) for t, p, o in offsets]
        admin.alter_consumer_group_offsets([ConsumerGroupTopicPartitions(group, tps)])[group].result(timeout=10)


def contents(bootstrap: str, topics: dict[str, int] = TOPICS) -> Contents:
    found: Contents = {(t, p): [] for t, n in topics.items() for p in range(n)}
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "reader", "enable.partition.eof": True,
                         "enable.auto.commit": False})  # fmt: skip
    consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in found])
    pending = set(found)
    while pending:
        for message in consumer.consume(1000, 1.0):
            tp = (message.topic() or "", message.partition() or 0)
            error = message.error()
            if error is not None:
                assert error.code() == KafkaError._PARTITION_EOF, error
                pending.discard(tp)
                continue
            listed = message.headers() or []
            pairs = listed.items() if isinstance(listed, dict) else listed
            headers = [(n, v.encode() if isinstance(v, str) else v) for n, v in pairs]
            found[tp].append((message.offset() or 0, message.timestamp()[1], message.key(), message.value(), headers))
    consumer.close()
    return found


def groups(bootstrap: str) -> dict[str, list[tuple[str, int, int]]]:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    out = {}
    for group in GROUPS:
        done = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(timeout=10)
        out[group] = sorted((tp.topic, tp.partition, tp.offset) for tp in done.topic_partitions or [])
    return out


def shape(bootstrap: str) -> dict[str, int]:
    listed = AdminClient({"bootstrap.servers": bootstrap}).list_topics(timeout=10).topics
    return {name: len(meta.partitions) for name, meta in listed.items() if name in TOPICS}


def test_a_kept_broker_comes_back_exactly(tmp_path: Path) -> None:
    config = StackConfig(root=tmp_path, falkordb=False, qdrant=False, keep=True)
    first = EmbeddedStack(config)
    bootstrap = first.start().require_bootstrap_servers()
    fill(bootstrap)
    before, offsets_before = contents(bootstrap), groups(bootstrap)
    assert sum(map(len, before.values())) == 66 and before[("engram.empty", 0)] == []
    first.stop()
    assert first.saved is not None and first.saved.records == 66 and first.saved.groups == 2
    assert has_snapshot(tmp_path)

    second = EmbeddedStack(config)
    bootstrap = second.start().require_bootstrap_servers()
    try:
        assert second.restored is not None and second.restored.moved == () and second.restored.records == 66
        assert not second.unclean_stop
        assert shape(bootstrap) == TOPICS
        assert contents(bootstrap) == before
        assert groups(bootstrap) == offsets_before == {g: sorted(o) for g, o in GROUPS.items()}
    finally:
        second.stop()


def engram(*args: str) -> dict[str, Any]:
    done = subprocess.run(  # noqa: S603 -- this repository's own CLI with fixed arguments
        [sys.executable, "-m", "engram.streams.cli", *args, "--json"], capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def graph_nodes(info: dict[str, Any]) -> int:
    with falkordb.FalkorDB(host=info["falkordb_host"], port=info["falkordb_port"]) as db:
        if "kept" not in db.list_graphs():
            return 0
        return int(db.select_graph("kept").query("MATCH (n:Thing) RETURN count(n)").result_set[0][0])


def test_engram_down_then_up_keeps_the_broker_and_the_graph(tmp_path: Path) -> None:
    root = str(tmp_path)
    info = engram("up", "--root", root)
    try:
        producer = Producer({"bootstrap.servers": info["bootstrap_servers"], "enable.idempotence": False})
        producer.produce("engram.kept", b"remembered", b"ada")
        assert producer.flush(10) == 0
        with falkordb.FalkorDB(host=info["falkordb_host"], port=info["falkordb_port"]) as db:
            db.select_graph("kept").query("UNWIND range(1, 50) AS i CREATE (:Thing {i: i})")
    finally:
        down = engram("down", "--root", root)
    assert down["saved"]["records"] == 1 and down["saved"]["connected_groups"] == []

    info = engram("up", "--root", root)
    try:
        assert info["restored"]["records"] == 1 and info["restored"]["moved"] == []
        values = [r[3] for r in contents(info["bootstrap_servers"], {"engram.kept": 1})[("engram.kept", 0)]]
        assert values == [b"remembered"]
        assert graph_nodes(info) == 50
    finally:
        engram("down", "--root", root, "--no-save")

    info = engram("up", "--root", root, "--no-keep")
    try:
        assert info["restored"] is None
        assert graph_nodes(info) == 0
        assert "engram.kept" not in AdminClient({"bootstrap.servers": info["bootstrap_servers"]}).list_topics().topics
    finally:
        assert engram("down", "--root", root)["saved"] is None


def test_an_unreadable_snapshot_fails_the_start_and_is_left_alone(tmp_path: Path) -> None:
    manifest = tmp_path / "broker" / "manifest.json"
    manifest.parent.mkdir()
    manifest.write_text('{"version": 99}', encoding="utf-8")
    stack = EmbeddedStack(StackConfig(root=tmp_path, falkordb=False, qdrant=False, keep=True))
    with pytest.raises(BrokerSnapshotError, match="unsupported broker snapshot version 99"):
        stack.start()
    assert stack.records == () and not (tmp_path / "stack.json").exists()
    assert manifest.read_text(encoding="utf-8") == '{"version": 99}'  # not saved over on the way out
