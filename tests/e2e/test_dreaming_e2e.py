"""Issue 15, end to end through the broker and a worker subprocess: a session goes idle, the dream
runs, RuleCommitted and NodeDormant reach engram.memory, and a later question about a dormant
detail re-awakens it and gets it in its context.

Dana talks about hiking in four sessions two days apart (she says she loves hiking in each: a rule
with four sessions of support). Then Eve says something twelve days later, on the same partition:
stream time passes every idle deadline and window, and the dreams run (T_decay is one day here).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import (
    CompiledContext,
    ConversationTurn,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeUpserted,
    RuleCommitted,
)
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import ask_worker, standin_config

pytestmark = pytest.mark.e2e

DAY = 86_400_000
T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
DETAIL = "The outdoor shop on Elm Street stocks Salomon hiking boots in every size."
SESSIONS = [
    [
        ("user", "I love hiking. I hike in the mountains on weekends."),
        ("assistant", "Hiking in the mountains is wonderful exercise. Which trails do you enjoy most?"),
        ("user", "I bought new Salomon hiking boots for the mountain trails."),
        ("assistant", DETAIL),
    ],
    [
        ("user", "I love hiking. This weekend I hiked the ridge trail in the mountains."),
        ("assistant", "The ridge trail is a beautiful mountain hike. How were the boots?"),
        ("user", "My hiking boots were comfortable on the mountain trail."),
        ("assistant", "Comfortable boots make long mountain hikes much more enjoyable."),
    ],
    [
        ("user", "I love hiking. I hiked to the lake in the mountains."),
        ("assistant", "The mountain lake hike is a lovely trail. Did you bring water?"),
        ("user", "Yes, I carried two liters of water on the hiking trail."),
        ("assistant", "Two liters of water is a good amount for a mountain hike."),
    ],
    [
        ("user", "I love hiking. Next weekend I will hike the summit trail in the mountains."),
        ("assistant", "The summit trail is the hardest mountain hike. Start early in the morning."),
        ("user", "I will start the hiking trail at six in the morning."),
        ("assistant", "Starting the mountain hike at six leaves time to reach the summit safely."),
    ],
]
MEMORY: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


def turn(user: str, session: int, index: int, role: str, text: str, time_ms: int) -> ConversationTurn:
    return {
        "turn_id": f"{user}-{session}-{index}", "user_id": user, "agent_id": "assistant", "flow_id": None,
        "session_id": f"{user}-s{session}", "turn_index": index, "role": role,  # type: ignore[typeddict-item]
        "content": text, "event_time_ms": time_ms, "layer": "USER", "causal_parent_ids": [], "tool_calls": [],
        "metadata": {},
    }  # fmt: skip


def conversation() -> list[ConversationTurn]:
    dana = [
        turn("dana", s, i, role, text, T0 + s * 2 * DAY + i * 60_000)
        for s, said in enumerate(SESSIONS)
        for i, (role, text) in enumerate(said)
    ]
    return [*dana, turn("eve", 0, 0, "user", "I started learning the cello.", T0 + 12 * DAY)]


def memory_events(config: EngramConfig) -> list[MemoryEvent]:
    return [MEMORY.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.memory)]


def wait_for_dreams(worker: WorkerProcess, config: EngramConfig, timeout_s: float = 60.0) -> list[MemoryEvent]:
    """Until the worker has run its dreams and engram.memory holds a RuleCommitted and a NodeDormant."""
    deadline = time.monotonic() + timeout_s
    while True:
        exposition = worker.scrape() or ""
        if metric_value(exposition, "engram_dreams_total") > 0 and metric_value(
            exposition, "engram_dormant_nodes_total"
        ):
            events = memory_events(config)
            kinds = {e["change"][0] for e in events}
            if {"engram.RuleCommitted", "engram.NodeDormant"} <= kinds:
                return events
        assert time.monotonic() < deadline, f"no dream after {timeout_s:.0f}s: {exposition[-2000:]}"
        time.sleep(0.5)


def node_ids_of(events: list[MemoryEvent], text: str) -> set[str]:
    return {n["node_id"] for e in events if (n := change_as(e, NodeUpserted)) is not None and n["text"] == text}


def ask(config: EngramConfig) -> CompiledContext:
    return ask_worker(
        config, "dana-boots", "dana", "Which shop stocks Salomon hiking boots?", token_budget=400, layers=["USER"],
        agent_id="assistant", event_time_ms=T0 + 13 * DAY,
    )  # fmt: skip


def test_an_idle_session_dreams_and_a_dormant_detail_reawakens_for_a_question(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config = standin_config(
        stack, tmp_path, unique_name, partitions=1, dream_idle_ms=10 * 60_000, dream_window_ms=DAY, dream_decay_ms=DAY
    )
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    publisher = Publisher.for_config(config)
    turns = conversation()
    for t in turns:
        publisher.publish(config.topics.turns, t["user_id"].encode(), codec.encode(t))
    assert publisher.flush() == len(turns)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        events = wait_for_dreams(worker, config)
        rules = [r for e in events if (r := change_as(e, RuleCommitted)) is not None]
        assert [r["text"] for r in rules] == ["user likes hiking regularly (4 sessions)"]
        assert len(rules[0]["evidence_node_ids"]) == 4 and "held out" in rules[0]["reason"]
        dormant = {d["node_id"] for e in events if (d := change_as(e, NodeDormant)) is not None}
        [detail] = node_ids_of(events, DETAIL)
        assert detail in dormant, "the shop detail (an old answer, its concept committed) should be dormant"
        for e in events:
            if (d := change_as(e, NodeDormant)) is not None:
                assert e["key"] == "dana" and "eq. 15" in d["reason"]

        compiled = ask(config)
        texts = [item["text"] for item in compiled["items"]]
        assert DETAIL in texts, texts
        assert any("re-awakened" in f for f in compiled["fallbacks"]), compiled["fallbacks"]
        deadline = time.monotonic() + 30
        while not any(
            (woke := change_as(e, NodeReawakened)) is not None and woke["node_id"] == detail
            for e in memory_events(config)
        ):
            assert time.monotonic() < deadline, "no NodeReawakened on engram.memory"
            time.sleep(0.5)
