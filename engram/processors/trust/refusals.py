"""What a refused request's requester is told: every request gets an answer (ARCHITECTURE.md).

A request the gate refuses (reason class ``unauthorized``), or one that decoded but broke a
contract rule (``invalid``), is dead-lettered, and, when its requester is known
(`Gate.refusal_topic`), also answered on the requester's topic: a `CompiledContext` (or a
`GraphAnswer`) with no content and the code and reason its dead letter carries, so that a client
raises at once instead of waiting out its timeout. The reason says nothing the requester did not
send or may not know: it names the request's own principal, layers and topics.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.schemas.records import CompiledContext, GraphAnswer

REFUSAL_CODES: Final = ("unauthorized", "invalid")  # the dead letter's reason class


def refused_context(request: Mapping[str, Any], code: str, reason: str) -> CompiledContext:
    """The answer to a refused ContextRequest: empty, with ``error_code`` and ``error`` set."""
    return {
        "request_id": str(request.get("request_id") or ""),
        "user_id": str(request.get("user_id") or ""),
        "session_id": str(request.get("session_id") or ""),
        "query": str(request.get("query") or ""),
        "route": "REFUSED",
        "route_reason": reason,
        "intent": "answer",
        "cache_hit": False,
        "partial": False,
        "fallbacks": [],
        "token_budget": int(request.get("token_budget") or 0),  # an Avro int, as the request's
        "total_tokens": 0,
        "items": [],
        "timings_ms": {},
        "error_code": code,
        "error": reason,
    }


def refused_graph_answer(request: Mapping[str, Any], code: str, reason: str) -> GraphAnswer:
    """The answer to a refused GraphRequest: not ok, the error prefixed with its code."""
    return {
        "query_id": str(request.get("query_id") or ""),
        "user_id": str(request.get("user_id") or ""),
        "query_type": str(request.get("query_type") or ""),
        "ok": False,
        "error": f"{code}: {reason}",
        "result_json": "{}",
        "nodes": 0,
        "events": 0,
        "elapsed_ms": 0.0,
        "node_texts": {},
    }
