"""The deterministic router on example queries, intents, and the optional LLM router's parsing."""

from __future__ import annotations

import pytest

from engram.processors.router import (
    Intent,
    LlmRouter,
    Route,
    RouterReplyError,
    RuleRouter,
    build_router_prompt,
    parse_router_reply,
)
from engram.processors.router.llm import ChatMessage

EXAMPLES: list[tuple[str, Route, Intent]] = [
    ("When did Caroline go to the LGBTQ support group?", Route.FACTUAL, Intent.ANSWER),
    ("What is the wifi password at the cabin?", Route.FACTUAL, Intent.ANSWER),
    ("Who did Melanie meet at the conference?", Route.FACTUAL, Intent.ANSWER),
    ("Find the message where Jon mentioned his dance studio", Route.FACTUAL, Intent.LOCATE),
    ("Why did Melanie decide to start painting again?", Route.THEMATIC, Intent.EXPLORE),
    ("How did Caroline's attitude toward her family change over time?", Route.THEMATIC, Intent.EXPLORE),
    ("Compare the two vacation plans we discussed", Route.THEMATIC, Intent.EXPLORE),
    ("Investigate all the incidents across the payment service history", Route.RESEARCH, Intent.EXPLORE),
    ("Why does authorize() call the fraud-check service in CreditCardProcessor?", Route.CODE, Intent.ANSWER),
    ("Where is parse_config defined in settings.py?", Route.CODE, Intent.LOCATE),
    ("Which class overrides the `authorize` method?", Route.CODE, Intent.ANSWER),
]


@pytest.mark.parametrize(("query", "route", "intent"), EXAMPLES)
def test_rule_router_routes_and_explains(query: str, route: Route, intent: Intent) -> None:
    decision = RuleRouter().route(query, None)
    assert (decision.route, decision.intent) == (route, intent)
    assert decision.reason.startswith(f"{route.value} → {route.system}")
    assert "intent" in decision.reason
    assert decision.features["words"] > 0


def test_intent_hint_wins_and_unknown_hints_are_reported() -> None:
    router = RuleRouter()
    boxed = router.route("What is the launch code?", "Time-Boxed")
    assert boxed.intent is Intent.TIME_BOXED and "from intent_hint" in boxed.reason
    odd = router.route("What is the launch code?", "meditate")
    assert odd.intent is Intent.ANSWER and "unknown hint 'meditate'" in odd.reason


def test_router_is_deterministic() -> None:
    first = RuleRouter().route("How is Project Apollo related to Hermes?", None)
    assert first == RuleRouter().route("How is Project Apollo related to Hermes?", None)


def test_llm_prompt_and_reply_parsing() -> None:
    messages = build_router_prompt("Why did the build break?", "explore")
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "explore" in messages[1]["content"]
    decision = parse_router_reply('Sure: {"route": "thematic", "intent": "answer", "reason": "causal"}', None)
    assert (decision.route, decision.intent) == (Route.THEMATIC, Intent.ANSWER)
    assert parse_router_reply('{"route": "CODE", "intent": "answer"}', "locate").intent is Intent.LOCATE
    for bad in ("no json here", '{"route": "SOMETHING"}', "[1, 2]"):
        with pytest.raises(RouterReplyError):
            parse_router_reply(bad)


def test_llm_router_falls_back_to_rules_and_says_so() -> None:
    def broken(_: list[ChatMessage]) -> str:
        return "I think it's probably factual?"

    decision = LlmRouter(broken).route("Why does authorize() fail in Payment.java?", None)
    assert decision.route is Route.CODE
    assert "LLM router failed: RouterReplyError; rules used" in decision.reason

    def good(_: list[ChatMessage]) -> str:
        return '{"route": "RESEARCH", "intent": "explore", "reason": "open question"}'

    assert LlmRouter(good).route("anything", None).route is Route.RESEARCH
