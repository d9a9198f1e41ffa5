"""What every end-to-end test needs to run a worker against the stand-ins."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from engram.infra.config import StackInfo
from engram.schemas.records import CompiledContext, ContextRequest, ConversationTurn, Layer
from engram.streams.admin import Publisher
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.replies import request_contexts


def standin_config(stack: StackInfo, root: Path, name: str, **overrides: Any) -> EngramConfig:
    """A worker config on the stand-ins with per-test topics (prefix ``name``), app id and data folder.

    ``overrides`` set any other field (partitions, FalkorDB, batch size, ...).
    """
    config = EngramConfig(
        bootstrap_servers=stack.require_bootstrap_servers(),
        app_id=f"e2e-{name}",
        topics=EngramConfig().topics.prefixed(name),
        partitions=2,
        data_dir=root / "data",
        web_port=free_port(),
        broker_profile="standin",
        batch_within_s=0.1,
    )
    return replace(config, **overrides)


def ask_worker(
    config: EngramConfig,
    request_id: str,
    user_id: str,
    query: str,
    *,
    token_budget: int,
    layers: list[Layer],
    agent_id: str,
    event_time_ms: int,
) -> CompiledContext:
    """One ContextRequest (session ``<user_id>-session``, no intent hint) answered by the running
    worker; the test fails if no compiled context comes back within 30 s."""
    request: ContextRequest = {
        "request_id": request_id,
        "user_id": user_id,
        "session_id": f"{user_id}-session",
        "query": query,
        "token_budget": token_budget,
        "authorized_layers": layers,
        "intent_hint": None,
        "agent_id": agent_id,
        "event_time_ms": event_time_ms,
    }
    answers = request_contexts(config, [request], 30.0)
    assert request_id in answers, "no compiled context within 30 s"
    return answers[request_id]


def publish_turns(config: EngramConfig, turns: Sequence[ConversationTurn]) -> None:
    """Publish turns keyed by user and wait until the broker has every one."""
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)
    for turn in turns:
        publisher.publish(config.topics.turns, turn["user_id"].encode(), codecs.turns.encode(turn))
    assert publisher.flush() == len(turns)
