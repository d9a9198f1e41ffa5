"""Issue 4, end to end: two users' facts through the real broker and a worker subprocess.

Alice and Bob both work at Meta in Menlo Park; Alice then moves to Google in Mountain View
(NeuSymMS IV.F) and her cat dies. Through the worker:

- every FactDecided concerns its own user only (key, user id, source turn, value), Alice's
  replacements and retraction happen to Alice only, and Bob's identical facts survive;
- replaying the event log's turns in process (`streams.steps.derive_turns`, fresh state) yields
  byte-identical FactDecided events and the same active facts; `engram replay` of the logged
  turns into a fresh topic set, consumed by a second worker, yields the same decisions;
- a context request for Alice gets her facts block, and only hers, with provenance on the turns.
"""

from __future__ import annotations

import time
from collections import defaultdict
from dataclasses import replace
from pathlib import Path
from typing import cast

import pytest

from engram.infra.config import StackInfo
from engram.processors.facts import BLOCK_HEADER, UserFacts, believed_at, facts_block
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import (
    FACT_DECIDED,
    CompiledContext,
    ConversationTurn,
    EventRef,
    FactDecided,
    MemoryEvent,
)
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.cli import main as cli_main
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from engram.streams.steps import derive_turns, facts_state
from tests.e2e.support import ask_worker, standin_config

pytestmark = pytest.mark.e2e

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
CONVERSATIONS: dict[str, list[str]] = {
    "alice": [
        "I work at Meta.",
        "I live in Menlo Park.",
        "I have a cat named Tom.",
        "I just started a new job at Google in Mountain View. I speak Python and Go.",
        "My cat died.",
    ],
    "bob": [
        "I work at Meta.",
        "I live in Menlo Park.",
        "I have a dog.",
        "I love sushi.",
        "I speak Rust.",
    ],
}
ALICE_ACTIVE = {
    ("works_at", "Google"),
    ("lives_in", "Mountain View"),
    ("speaks_language", "Python"),
    ("speaks_language", "Go"),
}
BOB_ACTIVE = {
    ("works_at", "Meta"),
    ("lives_in", "Menlo Park"),
    ("has_pet", "dog"),
    ("likes", "sushi"),
    ("speaks_language", "Rust"),
}
MEMORY: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


def make_turn(user: str, index: int, content: str) -> ConversationTurn:
    return {
        "turn_id": f"{user}-turn-{index}",
        "user_id": user,
        "agent_id": "assistant",
        "flow_id": None,
        "session_id": f"{user}-session",
        "turn_index": index,
        "role": "user",
        "content": content,
        "event_time_ms": T0 + index * 60_000,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": {},
    }


def interleaved_turns() -> list[ConversationTurn]:
    """Alice's and Bob's turns alternating, each user's in order."""
    rounds = max(len(texts) for texts in CONVERSATIONS.values())
    return [
        make_turn(user, i, texts[i]) for i in range(rounds) for user, texts in CONVERSATIONS.items() if i < len(texts)
    ]


def engram_config(stack: StackInfo, tmp_path: Path, name: str) -> EngramConfig:
    return standin_config(stack, tmp_path, name)


def wait_ingested(
    worker: WorkerProcess, config: EngramConfig, turns: int, timeout_s: float = 45.0
) -> dict[str, list[bytes]]:
    """Until the worker counts every turn as ingested, the event log holds every turn, its memory
    agent has received every MemoryEvent produced (the facts step's decisions included: they come
    a hop after the turns), and engram.memory reads back as many FactDecided events as the worker
    counted; returns those."""
    deadline = time.monotonic() + timeout_s
    while True:
        exposition = worker.scrape() or ""
        done = metric_value(exposition, "engram_ingest_messages_total", {"topic": config.topics.turns})
        logged = len(logged_turns(config))
        decisions = metric_value(exposition, "engram_facts_decisions_total")
        produced = metric_value(exposition, "engram_memory_events_total")
        received = metric_value(exposition, "engram_received_messages_total", {"topic": config.topics.memory})
        if done >= turns and logged >= turns and received >= produced > 0 and decisions > 0:
            raw = worker_decisions(config)
            if sum(len(r) for r in raw.values()) == decisions:
                return raw
        assert time.monotonic() < deadline, f"after {timeout_s:.0f}s: {done} turns ingested, {logged} in the log"
        time.sleep(0.25)


def logged_turns(config: EngramConfig) -> list[tuple[ConversationTurn, EventRef]]:
    """The turns in the event log with their coordinates, partition after partition, in offset order."""
    reader = eventlog_reader(config)
    topic = config.topics.turns
    if topic not in reader.topics():
        return []
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    return [
        (codec.decode(e["value"] or b""), {"topic": e["topic"], "partition": e["partition"], "offset": e["offset"]})
        for e in reader.read([topic])
    ]


def worker_decisions(config: EngramConfig) -> dict[str, list[bytes]]:
    """The encoded FactDecided MemoryEvents on engram.memory, per user, in topic order."""
    out: dict[str, list[bytes]] = defaultdict(list)
    for message in read_topic(config.bootstrap_servers, config.topics.memory):
        raw = message.value() or b""
        event = MEMORY.decode(raw)
        if event["change"][0] == FACT_DECIDED:
            out[event["key"]].append(raw)
    return dict(out)


def decided(raw: list[bytes]) -> list[FactDecided]:
    return [cast(FactDecided, MEMORY.decode(r)["change"][1]) for r in raw]


def active(decisions: list[FactDecided], user: str) -> set[tuple[str, str]]:
    return {(d["relation"], d["value"]) for d in believed_at(decisions, user, 2**62)}


def replay_in_process(
    turns: list[tuple[ConversationTurn, EventRef]], memory_topic: str
) -> tuple[dict[str, list[bytes]], dict[str, UserFacts]]:
    """The logged turns through a fresh Trace and facts step, as the worker derives them."""
    records = [Record(ref["topic"], ref["partition"], ref["offset"], 0, None, turn) for turn, ref in turns]
    derived, tables = derive_turns(records, memory_topic)
    events: dict[str, list[bytes]] = defaultdict(list)
    for event in derived:
        if event["change"][0] == FACT_DECIDED:
            events[event["key"]].append(MEMORY.encode(event))
    return dict(events), {user: facts_state(state, user)[0] for user, state in tables.items()}


def ask(config: EngramConfig, user: str, query: str) -> CompiledContext:
    return ask_worker(
        config, f"{user}-facts-request", user, query, token_budget=1000, layers=["USER"], agent_id="assistant",
        event_time_ms=T0 + 3_600_000,
    )  # fmt: skip


def assert_own_facts_only(raw: dict[str, list[bytes]], turns: list[tuple[ConversationTurn, EventRef]]) -> None:
    """Each decision is keyed by its user, names that user, comes from (cites) that user's turns
    only, and states a value that user said."""
    decisions = {user: decided(r) for user, r in raw.items()}
    turn_ids = {user: {f"{user}-turn-{i}" for i in range(len(t))} for user, t in CONVERSATIONS.items()}
    for user, ds in decisions.items():
        said = " ".join(CONVERSATIONS[user]).lower()
        for d in ds:
            assert d["user_id"] == user
            assert d["rule"] and d["reason"], d
            assert set(d["source_event_ids"]) <= turn_ids[user], d
            assert d["value"].lower() in said, d
    by_ref = {(ref["partition"], ref["offset"]): turn["user_id"] for turn, ref in turns}
    fact_ids = {user: {d["fact_id"] for d in ds} for user, ds in decisions.items()}
    assert not fact_ids["alice"] & fact_ids["bob"]
    for user, encoded in raw.items():
        for event in (MEMORY.decode(r) for r in encoded):
            assert event["key"] == user
            assert {by_ref[(s["partition"], s["offset"])] for s in event["sources"]} == {user}


def assert_revisions(decisions: dict[str, list[FactDecided]]) -> None:
    """Alice: Meta -> Google and Menlo Park -> Mountain View replaced, has_pet retracted. Bob: nothing."""
    alice = decisions["alice"]
    changed = [(d["decision"], d["rule"], d["relation"], d["value"]) for d in alice if d["decision"] != "store"]
    assert changed == [
        ("retract", "replace-single-valued", "works_at", "Meta"),
        ("replace", "promote-by-category", "works_at", "Google"),
        ("retract", "replace-single-valued", "lives_in", "Menlo Park"),
        ("replace", "promote-by-category", "lives_in", "Mountain View"),
        ("retract", "retract-negated-fact", "has_pet", "cat named Tom"),
    ]
    retracted = {d["value"]: d for d in alice if d["decision"] == "retract"}
    replaced = {d["value"]: d for d in alice if d["decision"] == "replace"}
    assert replaced["Google"]["supersedes"] == retracted["Meta"]["fact_id"]
    assert replaced["Mountain View"]["supersedes"] == retracted["Menlo Park"]["fact_id"]
    assert retracted["Meta"]["reason"] == "works_at 'meta' is superseded by 'google' (single-valued: latest wins)"
    assert retracted["Meta"]["valid_to_ms"] == T0 + 3 * 60_000
    assert retracted["cat named Tom"]["source_event_ids"] == ["alice-turn-4"]
    assert "cat" in retracted["cat named Tom"]["reason"]
    assert [d["decision"] for d in decisions["bob"]] == ["store"] * 5
    assert active(alice, "alice") == ALICE_ACTIVE
    assert active(decisions["bob"], "bob") == BOB_ACTIVE


def replay_through_a_second_worker(
    first: EngramConfig, tmp_path: Path, name: str, turns: int
) -> dict[str, list[bytes]]:
    """`engram replay` the first worker's logged turns into a fresh topic set, consumed by a fresh
    worker (own app id, tables and data folder); returns its FactDecided events per user."""
    prefix = f"{name}-replay"
    second = replace(
        first,
        app_id=f"e2e-{prefix}",
        topics=EngramConfig().topics.prefixed(prefix),
        data_dir=tmp_path / "replay-data",
        web_port=free_port(),
    )
    ensure_topics(second.bootstrap_servers, second.topics.every, second.partitions)
    args = ["replay", "--log", str(first.eventlog_dir), "--topics", first.topics.turns, "--to", second.topics.turns]
    assert cli_main([*args, "--bootstrap", first.bootstrap_servers, "--json"]) == 0
    with WorkerProcess(second, tmp_path / "replay-worker.log", topic_prefix=prefix) as worker:
        raw = wait_ingested(worker, second, turns)
    for encoded in raw.values():
        assert all(s["topic"] == second.topics.turns for r in encoded for s in MEMORY.decode(r)["sources"])
    return raw


def test_two_users_facts_never_mix_and_replay_gives_the_same_store(
    stack: StackInfo, tmp_path: Path, unique_name: str
) -> None:
    config = engram_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    turns = interleaved_turns()
    publisher = Publisher.for_config(config)
    for turn in turns:
        publisher.publish(config.topics.turns, turn["user_id"].encode(), codec.encode(turn))
    assert publisher.flush() == len(turns)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        raw = wait_ingested(worker, config, len(turns))
        logged = logged_turns(config)
        assert sorted(raw) == ["alice", "bob"]
        assert_own_facts_only(raw, logged)
        decisions = {user: decided(r) for user, r in raw.items()}
        assert_revisions(decisions)

        # Replay: the log's turns through a fresh step reproduce the worker's events byte for byte.
        replayed, states = replay_in_process(logged, config.topics.memory)
        assert replayed == raw
        for user in CONVERSATIONS:
            assert {(f.relation, f.value) for f in states[user].facts.values()} == active(decisions[user], user)

        compiled = ask(config, "alice", "Where does Alice work and live now, and which languages does she speak?")

    # Replay through the broker: the same decisions (sources aside: they name the new topic).
    again = replay_through_a_second_worker(config, tmp_path, unique_name, len(turns))
    assert {user: decided(r) for user, r in again.items()} == decisions

    blocks = [item for item in compiled["items"] if item["kind"] == "facts"]
    assert len(blocks) == 1, [item["kind"] for item in compiled["items"]]
    block = blocks[0]
    expected_text, _ = facts_block(states["alice"], "alice")
    assert block["text"] == expected_text
    assert block["text"].startswith(BLOCK_HEADER)
    assert "works_at Google" in block["text"] and "lives_in Mountain View" in block["text"]
    for foreign in ("Meta", "Menlo Park", "cat", "dog", "sushi", "Rust"):
        assert foreign not in block["text"], foreign
    alice_refs = {(ref["partition"], ref["offset"]) for turn, ref in logged if turn["user_id"] == "alice"}
    assert block["provenance"], "the facts block cites no source events"
    for ref in block["provenance"]:
        assert ref["topic"] == config.topics.turns
        assert (ref["partition"], ref["offset"]) in alice_refs
