"""The optional LLM router over a real HTTP chat API (a local OpenAI-compatible server), as the
worker builds it from its config; any failure of the model falls back to the rule router."""

from __future__ import annotations

import json
import time
from typing import Any

from engram.processors.router import LlmRouter, Route, RuleRouter
from engram.sinks.deadline import BlockingCalls
from engram.streams.config import EngramConfig
from engram.streams.stores import context_router
from tests.chat_server import chat_server, completion

SENT: list[dict[str, Any]] = []


def model(body: dict[str, Any]) -> tuple[int, str]:
    """Routes by a word of the request: the model disagrees with the rules on purpose."""
    SENT.append(body)
    request = body["messages"][-1]["content"]
    if "overloaded" in request:
        return 500, '{"error": "overloaded"}'
    if "slowly" in request:
        time.sleep(1.0)
    if "rambling" in request:
        return 200, completion("I would say this is mostly about research, maybe.")
    return 200, completion(json.dumps({"route": "RESEARCH", "intent": "explore", "reason": "open-ended"}))


def test_the_worker_uses_the_rules_unless_a_chat_api_is_configured() -> None:
    calls = BlockingCalls()
    assert isinstance(context_router(EngramConfig(), calls), RuleRouter)
    assert isinstance(context_router(EngramConfig(router_llm_url="http://127.0.0.1:9/v1"), calls), LlmRouter)


def test_llm_router_over_http_routes_as_the_model_says_and_falls_back_with_a_reason() -> None:
    with chat_server(model) as url:
        config = EngramConfig(router_llm_url=url, router_llm_model="router-test", router_llm_timeout_s=0.5)
        calls = BlockingCalls()
        router = context_router(config, calls)
        decision = router.route("Where does Ada work?", None)
        assert decision.route is Route.RESEARCH and "LLM (router-v1): open-ended" in decision.reason
        assert SENT[-1]["model"] == "router-test" and SENT[-1]["temperature"] == 0
        rules = RuleRouter().route("Where does Ada work? overloaded", None)
        for query, failure in (
            ("Where does Ada work? overloaded", "LLMTransportError"),
            ("Where does Ada work? slowly", "LLMTransportError"),
            ("Where does Ada work? rambling", "RouterReplyError"),
        ):
            fallback = router.route(query, None)
            assert fallback.route is rules.route, query
            assert f"LLM router failed: {failure}; rules used" in fallback.reason
        # Within a request's budget the router waits for a share of it, not the client's timeout.
        started = time.perf_counter()
        with calls.within(0.2):
            late = router.route("Where does Ada work? slowly", None)
        assert time.perf_counter() - started < 0.3
        assert late.route is rules.route and "LLM router failed: LLMDeadlineError; rules used" in late.reason
        calls.close()  # joins the abandoned call (it ends at the client's 0.5 s timeout)
