"""Two workers in one group: each holds the memory of the users whose partitions it owns plus the
shared memory every worker needs (a repo's code graph, TEAM-layer turns), replicated through
engram.memory.shared (streams/follow.py). Every request gets the same items, in the same order,
as with one worker.

The users and the repo are picked so that they hash to different partitions; the test checks that
from the topics, so a different partitioner fails it, saying why.
"""

from __future__ import annotations

import json
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CodeChange, CompiledContext, ConversationTurn, Layer
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess, metric_value
from tests.code.support import BASE, CARD, CRYPTO, QUESTION, REPO
from tests.e2e.support import ask_worker, standin_config
from tests.e2e.test_code_e2e import code_changes, code_nodes, holds
from tests.e2e.trace_support import topic_memory, wait_until

pytestmark = pytest.mark.e2e

PARTITIONS = 2
T0 = 1_767_225_600_000


def partition_of(key: str) -> int:
    """librdkafka's default partitioner: CRC-32 of the key, modulo the partition count."""
    return zlib.crc32(key.encode()) % PARTITIONS


# Two users on different partitions; the repo's code graph lives with one of them.
ADA = next(u for u in (f"ada-{n}" for n in range(100)) if partition_of(u) == partition_of(REPO))
BO = next(u for u in (f"bo-{n}" for n in range(100)) if partition_of(u) != partition_of(REPO))
SAID: dict[str, list[tuple[Layer, str]]] = {
    ADA: [
        ("USER", "I adopted a greyhound called Pixel last spring."),
        ("TEAM", "The payments team rotates the on-call pager every Tuesday at noon."),
    ],
    BO: [("USER", "My sister lives in Porto and teaches violin.")],
}
QUESTIONS: list[tuple[str, str, list[Layer]]] = [
    (BO, QUESTION, ["USER", "ORGANIZATION"]),
    (BO, "When does the payments team rotate the on-call pager?", ["USER", "TEAM"]),
    (ADA, "What is the name of my dog?", ["USER", "TEAM"]),
    (BO, "Where does my sister live?", ["USER", "TEAM"]),
]


def turns() -> list[ConversationTurn]:
    out: list[ConversationTurn] = []
    for user, said in SAID.items():
        for index, (layer, text) in enumerate(said):
            out.append(
                {
                    "turn_id": f"{user}-{index}", "user_id": user, "agent_id": None, "flow_id": None,
                    "session_id": f"{user}-session", "turn_index": index, "role": "user", "content": text,
                    "event_time_ms": T0 + index * 60_000, "layer": layer, "causal_parent_ids": [],
                    "tool_calls": [], "metadata": {},
                }
            )  # fmt: skip
    return out


def uncaused_changes() -> list[CodeChange]:
    """The polymorphic fixture's changes, none caused by a turn: all its memory is keyed by the repo."""
    return [{**c, "causal_parent_ids": [], "user_id": None, "session_id": None} for c in code_changes()]


def publish(config: EngramConfig) -> int:
    publisher = Publisher.for_config(config)
    turn_codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    code_codec: AvroCodec[CodeChange] = AvroCodec("CodeChange")
    for turn in turns():
        publisher.publish(config.topics.turns, turn["user_id"].encode(), turn_codec.encode(turn))
    for change in uncaused_changes():
        publisher.publish(config.topics.code, REPO.encode(), code_codec.encode(change))
    return publisher.flush()


def progress(workers: list[WorkerProcess], config: EngramConfig) -> dict[str, float]:
    texts = [w.scrape() or "" for w in workers]
    return {
        "ingested": sum(metric_value(t, "engram_ingest_messages_total") for t in texts),
        "produced": sum(metric_value(t, "engram_memory_events_total") for t in texts),
        "applied": sum(metric_value(t, "engram_sink_applied_total", {"sink": "qdrant"}) for t in texts),
        "followed": min(metric_value(t, "engram_view_followed_total") for t in texts),
    }


def holdings(worker: WorkerProcess) -> dict[str, Any]:
    page = worker.page("/view")
    assert page is not None, "the worker serves /view"
    held: dict[str, Any] = json.loads(page)
    return held


def run(workers: list[WorkerProcess], config: EngramConfig, shared: int) -> list[CompiledContext]:
    """Publish the inputs, wait until every worker's view holds the shared memory, ask."""
    expected = publish(config)
    assert expected == len(turns()) + len(uncaused_changes())

    def stored() -> bool:
        p = progress(workers, config)
        return p["ingested"] >= expected and p["applied"] >= p["produced"] > 0 and p["followed"] >= shared

    wait_until("the inputs stored and the shared memory followed", stored, 60.0, lambda: progress(workers, config))
    return [
        ask_worker(
            config,
            f"q-{i}",
            user,
            query,
            token_budget=800,
            layers=layers,
            agent_id="coder",
            event_time_ms=T0 + 3_600_000,
        )  # fmt: skip
        for i, (user, query, layers) in enumerate(QUESTIONS)
    ]


def digest(contexts: list[CompiledContext]) -> list[list[str]]:
    return [[item["node_id"] for item in c["items"]] for c in contexts]


def test_two_workers_hold_their_own_users_and_answer_as_one(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    first = standin_config(stack, tmp_path / "a", unique_name, partitions=PARTITIONS)
    second = replace(first, data_dir=tmp_path / "b" / "data", web_port=free_port())
    alone = standin_config(stack, tmp_path / "one", f"{unique_name}-one", partitions=PARTITIONS)
    for config in (first, alone):
        ensure_topics(config.bootstrap_servers, config.topics.every, PARTITIONS)
    # The shared part: the repo's code graph and Ada's TEAM-layer turn (its node and edges).
    with (
        WorkerProcess(first, tmp_path / "a.log", topic_prefix=unique_name) as one,
        WorkerProcess(second, tmp_path / "b.log", topic_prefix=unique_name) as two,
    ):
        workers = [one, two]

        def owned() -> list[float]:
            return [
                metric_value(w.scrape() or "", "engram_assigned_partitions", {"topic": first.topics.memory})
                for w in workers
            ]

        wait_until("the two workers to split the partitions", lambda: owned() == [1, 1], 45.0, owned)
        shared = 1  # at least: the exact count is read from the replica topic below
        answers = run(workers, first, shared)
        replicated = read_topic(first.bootstrap_servers, first.topics.shared)
        wait_until(
            "every view to follow the whole replica",
            lambda: progress(workers, first)["followed"] >= len(replicated),
            30.0,
            lambda: progress(workers, first),
        )
        views = [holdings(w) for w in workers]

    memory = topic_memory(first)
    partitions = {m.key(): m.partition() for m in read_topic(first.bootstrap_servers, first.topics.memory)}
    assert partitions[ADA.encode()] == partitions[REPO.encode()] != partitions[BO.encode()], partitions

    # Each view holds exactly one user's USER-layer memory, and both hold the shared memory.
    assert sorted(sorted(v["users"]) for v in views) == [[ADA], [BO]], views
    nodes = code_nodes(memory)
    for view in views:
        assert view["layers"].get("TEAM", 0) >= 1, view
        code_layer_nodes = view["layers"].get("ORGANIZATION", 0)
        assert code_layer_nodes >= len(nodes), f"the code graph ({len(nodes)} nodes) in every view: {view}"

    code_answer, pager, pixel, porto = answers
    assert code_answer["route"] == "CODE", code_answer["route_reason"]
    for entity in (BASE, CARD, CRYPTO):
        assert any(holds(nodes[i["node_id"]], entity) for i in code_answer["items"] if i["node_id"] in nodes), entity
    assert any("on-call pager" in item["text"] for item in pager["items"]), "Bo sees Ada's TEAM-layer turn"
    assert not any("greyhound" in item["text"] for c in (pager, porto) for item in c["items"]), (
        "never Ada's USER memory"
    )
    assert any("Pixel" in item["text"] for item in pixel["items"])
    assert any("Porto" in item["text"] for item in porto["items"])

    # The same inputs through one worker: the same items, in the same order.
    with WorkerProcess(alone, tmp_path / "one.log", topic_prefix=f"{unique_name}-one") as single:
        assert digest(run([single], alone, len(replicated))) == digest(answers)
