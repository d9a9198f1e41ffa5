"""Hand-made turns for the Trace tests."""

from __future__ import annotations

from typing import cast

from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    NODE_UPSERTED,
    ConversationTurn,
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    MemoryEvent,
    NodeUpserted,
    Role,
    ToolCall,
)


def turn(
    index: int,
    content: str,
    *,
    role: Role = "user",
    session: str = "s1",
    user: str = "u1",
    turn_id: str | None = None,
    parents: list[str] | None = None,
    tool_calls: list[ToolCall] | None = None,
    metadata: dict[str, str] | None = None,
) -> ConversationTurn:
    return {
        "turn_id": turn_id or f"{session}-t{index}",
        "user_id": user,
        "agent_id": None,
        "flow_id": None,
        "session_id": session,
        "turn_index": index,
        "role": role,
        "content": content,
        "event_time_ms": 1_700_000_000_000 + index * 1000,
        "layer": "USER",
        "causal_parent_ids": parents or [],
        "tool_calls": tool_calls or [],
        "metadata": metadata or {},
    }


def ref(offset: int, topic: str = "engram.turns") -> EventRef:
    return {"topic": topic, "partition": 0, "offset": offset}


def upserted_edges(events: list[MemoryEvent]) -> list[EdgeUpserted]:
    return [cast(EdgeUpserted, e["change"][1]) for e in events if e["change"][0] == EDGE_UPSERTED]


def removed_edges(events: list[MemoryEvent]) -> list[EdgeRemoved]:
    return [cast(EdgeRemoved, e["change"][1]) for e in events if e["change"][0] == EDGE_REMOVED]


def upserted_nodes(events: list[MemoryEvent]) -> list[NodeUpserted]:
    return [cast(NodeUpserted, e["change"][1]) for e in events if e["change"][0] == NODE_UPSERTED]
