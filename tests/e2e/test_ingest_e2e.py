"""Issue 2, end to end: 1,000 turns and 50 garbage messages through the real broker and a worker.

The log then holds exactly the 1,000 turns, in per-partition order, and the dead-letter topic holds
exactly 50 entries, each with a reason and the raw bytes.
"""

from __future__ import annotations

import time
from collections import defaultdict
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, DeadLetter
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e


def make_turn(i: int) -> ConversationTurn:
    user = f"user-{i % 7}"
    return {
        "turn_id": f"turn-{i}",
        "user_id": user,
        "agent_id": "agent",
        "flow_id": None,
        "session_id": f"{user}-session-{i % 3}",
        "turn_index": i,
        "role": "user" if i % 2 == 0 else "assistant",
        "content": f"message number {i} about topic {i % 11}",
        "event_time_ms": 1_760_000_000_000 + i * 1000,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": {},
    }


def garbage(i: int) -> bytes:
    kinds = [b"", b"plain text", b"\xc3\x01" + bytes(8) + b"body", b'{"json": true}', bytes(range(i % 40))]
    return kinds[i % len(kinds)] + str(i).encode()


def logged(config: EngramConfig, topic: str) -> dict[int, list[int]]:
    reader = eventlog_reader(config)
    if topic not in reader.topics():
        return {}
    return {p: [e["offset"] for e in reader.read_partition(topic, p)] for p in reader.partitions(topic)}


def test_thousand_turns_and_fifty_garbage(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name, partitions=3)
    names = config.topics
    ensure_topics(config.bootstrap_servers, names.archived, config.partitions)
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    turns = [make_turn(i) for i in range(1000)]
    publisher = Publisher.for_config(config)
    for i, turn in enumerate(turns):
        publisher.publish(names.turns, turn["user_id"].encode(), codec.encode(turn))
        if i % 20 == 0:
            publisher.publish(names.turns, b"bad", garbage(i // 20))
    assert publisher.flush() == 1050

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        deadline = time.monotonic() + 90
        while True:
            exposition = worker.scrape() or ""
            ingested = metric_value(exposition, "engram_ingest_messages_total", {"topic": names.turns})
            dead = metric_value(exposition, "engram_deadletter_messages_total")
            in_log = sum(len(v) for v in logged(config, names.turns).values())
            # The memory agent's first batch comes after the turns that derived it (on a loaded
            # machine, after the last of them): wait for it too.
            memory_decoded = metric_value(exposition, "engram_decoded_messages_total", {"topic": names.memory})
            if ingested >= 1000 and dead >= 50 and in_log >= 1000 and memory_decoded > 0:
                break
            assert time.monotonic() < deadline, (
                f"after 90 s: {ingested} ingested, {dead} dead, {in_log} in the log, {memory_decoded} memory decoded"
            )
            time.sleep(0.3)
        # One decode per message: no agent decodes what another already did (a redelivery after a
        # restart would count again, but this worker never restarts).
        received = metric_value(exposition, "engram_received_messages_total", {"topic": names.turns})
        decoded = metric_value(exposition, "engram_decoded_messages_total", {"topic": names.turns})
        assert received == decoded == 1050
        memory_received = metric_value(exposition, "engram_received_messages_total", {"topic": names.memory})
        assert memory_received == memory_decoded > 0

    by_partition = logged(config, names.turns)
    assert sum(len(offsets) for offsets in by_partition.values()) == 1000
    for offsets in by_partition.values():
        assert offsets == sorted(offsets) and len(set(offsets)) == len(offsets)

    # The logged records are exactly the published turns, and each user's turns keep their order.
    reader = eventlog_reader(config)
    seen: dict[str, list[int]] = defaultdict(list)
    for p in reader.partitions(names.turns):
        for event in reader.read_partition(names.turns, p):
            turn = codec.decode(event["value"] or b"")
            seen[turn["user_id"]].append(turn["turn_index"])
    assert sorted(i for indices in seen.values() for i in indices) == list(range(1000))
    assert all(indices == sorted(indices) for indices in seen.values())

    dl_codec: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
    letters = [dl_codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, names.deadletter)]
    assert len(letters) == 50
    assert all(letter["reason"] and letter["topic"] == names.turns for letter in letters)
    assert sorted(letter["value"] or b"" for letter in letters) == sorted(garbage(i) for i in range(50))
    assert metric_value(exposition, "engram_deadletter_messages_total") == 50
    assert metric_value(exposition, "engram_ingest_messages_total", {"topic": names.turns}) == 1000
