"""The bundled demo sample: conversation turns, code changes, questions and a few bad messages.

Everything is derived deterministically from `conversations.json` (ids from content, times from
the file), so two demo runs publish byte-identical inputs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from importlib import resources
from typing import Any

from engram.schemas.events import stable_id
from engram.schemas.records import CodeChange, ContextRequest, ConversationTurn, Layer, Role, ToolCall

TURN_GAP_MS = 45_000


@dataclass(frozen=True)
class SampleBundle:
    turns: list[ConversationTurn]
    code: list[CodeChange]
    requests: list[ContextRequest]
    garbage: list[bytes]


def _epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


def turn_id(session_id: str, index: int) -> str:
    return stable_id("sample-turn", session_id, index)


def _session_turns(session: dict[str, Any]) -> list[ConversationTurn]:
    start = _epoch_ms(session["start"])
    turns: list[ConversationTurn] = []
    for index, row in enumerate(session["turns"]):
        role: Role = row[0]
        extra: dict[str, Any] = row[2] if len(row) > 2 else {}
        tool_calls: list[ToolCall] = list(extra.get("tool_calls", []))
        layer: Layer = session["layer"]
        turns.append(
            {
                "turn_id": turn_id(session["session_id"], index),
                "user_id": session["user_id"],
                "agent_id": session.get("agent_id"),
                "flow_id": None,
                "session_id": session["session_id"],
                "turn_index": index,
                "role": role,
                "content": row[1],
                "event_time_ms": start + index * TURN_GAP_MS,
                "layer": layer,
                "causal_parent_ids": [],
                "tool_calls": tool_calls,
                "metadata": dict(extra.get("metadata", {})),
            }
        )
    return turns


def _code_change(spec: dict[str, Any]) -> CodeChange:
    content = resources.files("engram.streams.sample").joinpath(f"{spec['file']}.sample").read_text(encoding="utf-8")
    caused_by = spec.get("caused_by")
    return {
        "change_id": stable_id("sample-code", spec["repo"], spec["path"], spec["commit"]),
        "repo": spec["repo"],
        "path": spec["path"],
        "language": spec["language"],
        "commit": spec["commit"],
        "content": content,
        "deleted": False,
        "event_time_ms": _epoch_ms(spec["at"]),
        "layer": "ORGANIZATION",
        "causal_parent_ids": [turn_id(caused_by[0], caused_by[1])] if caused_by else [],
        "user_id": "ada" if caused_by else None,
        "session_id": caused_by[0] if caused_by else None,
    }


def _request(index: int, spec: dict[str, Any], at_ms: int) -> ContextRequest:
    return {
        "request_id": stable_id("sample-request", index, spec["query"]),
        "user_id": spec["user_id"],
        "session_id": spec["session_id"],
        "query": spec["query"],
        "token_budget": spec["budget"],
        "authorized_layers": list(spec["layers"]),
        "intent_hint": None,
        "agent_id": "helpdesk",
        "event_time_ms": at_ms,
    }


def load_sample() -> SampleBundle:
    raw = json.loads(
        resources.files("engram.streams.sample").joinpath("conversations.json").read_text(encoding="utf-8")
    )
    turns = [t for session in raw["sessions"] for t in _session_turns(session)]
    last = max(t["event_time_ms"] for t in turns)
    return SampleBundle(
        turns=turns,
        code=[_code_change(spec) for spec in raw["code"]],
        requests=[_request(i, spec, last + 60_000 * (i + 1)) for i, spec in enumerate(raw["questions"])],
        garbage=[text.encode("latin-1") for text in raw["garbage"]],
    )
