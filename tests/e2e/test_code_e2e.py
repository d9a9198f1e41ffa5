"""Issue 6, end to end: seed 000 §4.2.1's polymorphic codebase through the broker and a worker.

Every fixture file is published as a CodeChange; one of them (credit_card.py) is caused by a
conversation turn. Asked "Why does authorize() sometimes call the fraud-check service and
sometimes the blockchain service?", the compiled context holds the three `authorize` methods,
FraudCheckService and BlockchainValidator, base method first, and not AuthService.authorize_user.
A flat-vector baseline over the same code nodes, with as many items, misses at least one of them.
The CAUSAL edge from the turn to the changed module and method is in engram.memory.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from pathlib import Path
from typing import cast

import numpy as np
import pytest

from engram.infra.config import StackInfo
from engram.processors.embedding import default_embedder
from engram.processors.trace.builder import event_node_id
from engram.schemas.codec import AvroCodec
from engram.schemas.records import (
    EDGE_UPSERTED,
    NODE_UPSERTED,
    CodeChange,
    CompiledContext,
    ContextItem,
    ConversationTurn,
    EdgeUpserted,
    MemoryEvent,
    NodeUpserted,
)
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from tests.code.support import BASE, CARD, CRYPTO, POLYMORPHIC, QUESTION, REPO, REQUIRED
from tests.e2e.support import ask_worker, standin_config

pytestmark = pytest.mark.e2e

USER = "dev-ana"
TURN_ID = "turn-add-fraud-check"
CAUSED_PATH = "payments/credit_card.py"
T0 = 1_767_225_600_000


def the_turn() -> ConversationTurn:
    return {
        "turn_id": TURN_ID,
        "user_id": USER,
        "agent_id": "coder",
        "flow_id": None,
        "session_id": f"{USER}-session",
        "turn_index": 0,
        "role": "user",
        "content": "Card payments must pass a fraud check before CreditCardProcessor.authorize reserves the amount.",
        "event_time_ms": T0,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": {},
    }


def code_changes() -> list[CodeChange]:
    """One CodeChange per fixture file, path relative to the fixture root; credit_card.py names the turn."""
    changes: list[CodeChange] = []
    for i, file in enumerate(sorted(POLYMORPHIC.rglob("*.py"))):
        path = file.relative_to(POLYMORPHIC).as_posix()
        caused = path == CAUSED_PATH
        changes.append(
            {
                "change_id": f"change-{i}",
                "repo": REPO,
                "path": path,
                "language": "python",
                "commit": "c0ffee",
                "content": file.read_text("utf-8"),
                "deleted": False,
                "event_time_ms": T0 + 60_000 + i,
                "layer": "ORGANIZATION",
                "causal_parent_ids": [TURN_ID] if caused else [],
                "user_id": USER if caused else None,
                "session_id": f"{USER}-session" if caused else None,
            }
        )
    return changes


def engram_config(stack: StackInfo, tmp_path: Path, name: str) -> EngramConfig:
    return standin_config(stack, tmp_path, name)


def memory_events(config: EngramConfig) -> list[MemoryEvent]:
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    return [codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.memory)]


def wait_stored(worker: WorkerProcess, config: EngramConfig, files: int, timeout_s: float = 45.0) -> list[MemoryEvent]:
    """Until the turn and every change are ingested, engram.memory reads back every MemoryEvent the
    worker counted, and the store agent applied them all (the compile path's view included)."""
    deadline = time.monotonic() + timeout_s
    names = config.topics
    while True:
        exposition = worker.scrape() or ""
        code = metric_value(exposition, "engram_ingest_messages_total", {"topic": names.code})
        turns = metric_value(exposition, "engram_ingest_messages_total", {"topic": names.turns})
        produced = metric_value(exposition, "engram_memory_events_total")
        applied = metric_value(exposition, "engram_sink_applied_total", {"sink": "qdrant"})
        if code >= files and turns >= 1 and applied >= produced:
            events = memory_events(config)
            if len(events) == produced:
                return events
        assert time.monotonic() < deadline, f"after {timeout_s:.0f}s: {code}/{files} changes, {turns}/1 turns"
        time.sleep(0.25)


def ask(config: EngramConfig, user_id: str = USER, request_id: str = "why-authorize") -> CompiledContext:
    return ask_worker(
        config, request_id, user_id, QUESTION, token_budget=800, layers=["USER", "ORGANIZATION"], agent_id="coder",
        event_time_ms=T0 + 3_600_000,
    )  # fmt: skip


def code_nodes(events: Iterable[MemoryEvent]) -> dict[str, NodeUpserted]:
    """The latest upsert of every code node in engram.memory, by node id."""
    nodes: dict[str, NodeUpserted] = {}
    for event in events:
        kind, change = event["change"]
        node = cast(NodeUpserted, change)
        if kind == NODE_UPSERTED and node["kind"].startswith("code_"):
            nodes[node["node_id"]] = node
    return nodes


def holds(node: NodeUpserted, entity: str) -> bool:
    """The node is the entity itself, or a structural chunk that contains it."""
    props = node["properties"]
    return props.get("qualname") == entity or entity in props.get("members", "").split(",")


def touches(node: NodeUpserted, entity: str) -> bool:
    """Lenient: the node holds the entity or any member of it (a method of a class touches it)."""
    names = [node["properties"].get("qualname", ""), *node["properties"].get("members", "").split(",")]
    return any(n == entity or n.startswith(f"{entity}.") for n in names if n)


def flat_baseline(nodes: dict[str, NodeUpserted], k: int) -> list[NodeUpserted]:
    """Flat RAG: every code node's text an independent vector; the top k by cosine to the question."""
    ordered = [nodes[i] for i in sorted(nodes) if nodes[i]["text"]]
    embedder = default_embedder()
    scores = embedder.embed([n["text"] for n in ordered]) @ embedder.embed([QUESTION])[0]
    return [ordered[i] for i in np.argsort(-scores, kind="stable")[:k]]


def first_index(items: list[ContextItem], nodes: dict[str, NodeUpserted], entity: str) -> int:
    found = [i for i, item in enumerate(items) if item["node_id"] in nodes and holds(nodes[item["node_id"]], entity)]
    assert found, f"{entity} is not in the compiled context"
    return found[0]


def assert_walks_back_to_the_turn(events: list[MemoryEvent], nodes: dict[str, NodeUpserted]) -> None:
    """ "Why did this method change?": turn -CAUSAL-> the changed module and method, nothing else."""
    turn_node = event_node_id(USER, TURN_ID)
    turns = [cast(NodeUpserted, e["change"][1]) for e in events if e["change"][0] == NODE_UPSERTED]
    assert any(n["node_id"] == turn_node and n["kind"] == "event" for n in turns), "no node for the turn"
    causal = [
        edge
        for edge in (cast(EdgeUpserted, e["change"][1]) for e in events if e["change"][0] == EDGE_UPSERTED)
        if edge["edge_type"] == "CAUSAL" and edge["dst"] in nodes
    ]
    effects = {nodes[edge["dst"]]["properties"]["qualname"] for edge in causal if edge["src"] == turn_node}
    assert {"payments.credit_card", CARD} <= effects
    assert all(edge["src"] == turn_node for edge in causal)
    assert all(nodes[edge["dst"]]["properties"]["path"] == CAUSED_PATH for edge in causal)


def assert_flat_baseline_misses(nodes: dict[str, NodeUpserted], k: int) -> None:
    """The flat-vector baseline over the same code nodes, as many items as the compiled context has."""
    top = flat_baseline(nodes, k)
    print(f"flat baseline, top {k}:")
    for node in top:
        print(f"  [{node['kind']}] {node['text'].splitlines()[0]}")
    missed = [entity for entity in REQUIRED if not any(holds(node, entity) for node in top)]
    lenient = [entity for entity in REQUIRED if not any(touches(node, entity) for node in top)]
    print(f"the baseline misses {missed}; counting a class's members as the class, it misses {lenient}")
    assert missed, "the flat baseline holds every required entity"


def test_polymorphic_authorize_through_the_broker(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = engram_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    changes = code_changes()
    assert {c["path"] for c in changes} >= {CAUSED_PATH, "payments/base.py", "auth/service.py"}
    publisher = Publisher.for_config(config)
    turn_codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    code_codec: AvroCodec[CodeChange] = AvroCodec("CodeChange")
    publisher.publish(config.topics.turns, USER.encode(), turn_codec.encode(the_turn()))
    for change in changes:
        publisher.publish(config.topics.code, REPO.encode(), code_codec.encode(change))
    assert publisher.flush() == len(changes) + 1

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        events = wait_stored(worker, config, len(changes))
        compiled = ask(config)

    nodes = code_nodes(events)
    assert_walks_back_to_the_turn(events, nodes)
    items = [item for item in compiled["items"] if item["node_id"] in nodes]
    print(f"route {compiled['route']} ({compiled['route_reason']}), {compiled['total_tokens']} tokens")
    for item in compiled["items"]:
        print(f"  [{item['kind']}] {item['text'].splitlines()[0]}")
    assert compiled["route"] == "CODE"
    assert compiled["total_tokens"] <= 800

    # The structural answer: every authorize and both services, the base method before the overrides.
    positions = {entity: first_index(items, nodes, entity) for entity in REQUIRED}
    assert positions[BASE] < positions[CARD] and positions[BASE] < positions[CRYPTO]
    assert_flat_baseline_misses(nodes, k=len(items))

    # ... and not the vocabulary twin (neither its method, nor a class or chunk showing it).
    twins = [item["text"].splitlines()[0] for item in compiled["items"] if "authorize_user" in item["text"]]
    assert not twins, f"the compiled context holds AuthService.authorize_user: {twins}"
