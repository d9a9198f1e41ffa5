"""An optional LLM router: a pure, versioned prompt builder and a strict reply parser.

The transport (an HTTP chat call) lives in `sinks/`; it is injected as a callable, and
`over_chat_api` adapts an OpenAI-compatible chat client (`sinks/llm_http.OpenAIChatTransport`) to
it. Any transport error or unparsable reply falls back to the rule router, and the reason says so.
The call runs inside the compile, so the model's latency adds to every request: keep the client's
timeout short.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final, TypedDict

from engram.processors.chat import ChatTransport, message_content
from engram.processors.router.decision import Intent, Route, RouteDecision, parse_intent
from engram.processors.router.rules import RuleRouter

ROUTER_PROMPT_VERSION: Final = "router-v1"


class ChatMessage(TypedDict):
    role: str
    content: str


class RouterReplyError(ValueError):
    """The model's reply is not the JSON object the prompt asked for."""


Transport = Callable[[list[ChatMessage]], str]

_SYSTEM_PROMPT: Final = (
    "You route memory-retrieval requests for an AI agent. Classify the request:\n"
    "- FACTUAL: a direct lookup (who/what/when/where), answered by a few memories.\n"
    "- THEMATIC: relations, causes, comparisons or change over time across memories.\n"
    "- RESEARCH: an open investigation across many memories.\n"
    "- CODE: source code, files, functions, classes, errors in a codebase.\n"
    "Intent is one of explore, answer, locate, time-boxed.\n"
    'Reply with one JSON object only: {"route": "...", "intent": "...", "reason": "..."}'
)


def build_router_prompt(query: str, intent_hint: str | None) -> list[ChatMessage]:
    hint = f"\nIntent hint from the caller: {intent_hint}" if intent_hint else ""
    return [
        {"role": "system", "content": _SYSTEM_PROMPT},
        {"role": "user", "content": f"Request: {query}{hint}"},
    ]


def parse_router_reply(text: str, intent_hint: str | None = None) -> RouteDecision:
    """Parse `{"route", "intent", "reason"}`; a valid intent hint overrides the model's intent."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        msg = "router reply holds no JSON object"
        raise RouterReplyError(msg)
    try:
        data = json.loads(text[start : end + 1])
    except json.JSONDecodeError as exc:
        msg = f"router reply is not valid JSON: {exc.msg}"
        raise RouterReplyError(msg) from exc
    if not isinstance(data, dict):
        msg = "router reply is not a JSON object"
        raise RouterReplyError(msg)
    try:
        route = Route(str(data.get("route", "")).upper())
    except ValueError as exc:
        msg = f"unknown route {data.get('route')!r}"
        raise RouterReplyError(msg) from exc
    intent = parse_intent(intent_hint) or parse_intent(str(data.get("intent", ""))) or Intent.ANSWER
    reason = str(data.get("reason", "")).strip() or "no reason given"
    return RouteDecision(route, intent, f"{route.value} → {route.system}: LLM ({ROUTER_PROMPT_VERSION}): {reason}")


def over_chat_api(client: ChatTransport, model: str) -> Transport:
    """A `Transport` over an OpenAI-compatible chat-completions client (temperature 0, one choice)."""

    def send(messages: list[ChatMessage]) -> str:
        body: dict[str, object] = {"model": model, "messages": list(messages), "temperature": 0, "n": 1}
        return message_content(client.complete(body))

    return send


class LlmRouter:
    def __init__(self, transport: Transport, fallback: RuleRouter | None = None) -> None:
        self.transport = transport
        self.fallback = fallback or RuleRouter()

    def route(self, query: str, intent_hint: str | None) -> RouteDecision:
        try:
            return parse_router_reply(self.transport(build_router_prompt(query, intent_hint)), intent_hint)
        except Exception as exc:  # any failure of the optional model means "use the rules", by design
            decision = self.fallback.route(query, intent_hint)
            reason = f"{decision.reason} [LLM router failed: {type(exc).__name__}; rules used]"
            return RouteDecision(decision.route, decision.intent, reason, decision.features)
