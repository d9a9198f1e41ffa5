"""The optional LLM extractor against a tiny local OpenAI-compatible server with canned answers."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engram.processors.facts.extractor import Utterance
from engram.processors.facts.llm import LLMExtractor, parse_response
from engram.processors.facts.prompts import MAX_FACTS, PROMPT_VERSION, TEMPERATURE, extraction_messages, request_body
from engram.sinks.llm_http import LLMHttpConfig, LLMTransportError, OpenAIChatTransport
from tests.chat_server import chat_server, completion

PAPER_ANSWER = json.dumps(
    [
        {"subject": "user", "relation": "lives_in", "value": "Toronto", "confidence": 0.95, "scope": "user"},
        {"subject": "user", "relation": "works_at", "value": "iVedha", "confidence": 0.9, "scope": "user"},
    ]
)


BODIES: list[dict[str, Any]] = []


def canned(body: dict[str, Any]) -> tuple[int, str]:
    """Answers by the ``case`` in the last user message; records what it was sent."""
    BODIES.append(body)
    case = body["messages"][-1]["content"].rsplit(": ", 1)[-1]
    status, text = 200, completion(PAPER_ANSWER)
    if case == "fenced":
        text = completion("```json\n" + PAPER_ANSWER + "\n```")
    elif case == "garbage":
        text = completion("Sure! Here are the facts: Toronto, iVedha")
    elif case == "not-json":
        text = "<html>oops</html>"
    elif case == "error":
        status, text = 500, '{"error": "overloaded"}'
    elif case == "slow":
        time.sleep(0.6)
    elif case == "many":
        many = [{"relation": "likes", "value": f"dish {i}", "confidence": 0.8, "scope": "user"} for i in range(15)]
        text = completion(json.dumps({"facts": many}))
    elif case == "bad-items":
        items = [
            {"relation": "likes", "value": "tea", "confidence": 0.8},
            {"relation": "likes", "value": "x", "confidence": 7},
            {"relation": "likes", "value": 3, "confidence": 0.5},
            "not an object",
            {"relation": "works_as", "value": "planner", "confidence": 0.9, "scope": "agent"},
            {"relation": "no_longer_has", "value": "cat", "confidence": 0.9, "scope": "galaxy"},
        ]
        text = completion(json.dumps(items))
    return status, text


@pytest.fixture
def server_url() -> Iterator[str]:
    with chat_server(canned) as url:
        yield url


def extractor(url: str, timeout_s: float = 5.0) -> tuple[LLMExtractor, OpenAIChatTransport]:
    transport = OpenAIChatTransport(LLMHttpConfig(base_url=url, api_key="test-key", timeout_s=timeout_s))
    return LLMExtractor(transport, "tiny-model"), transport


def test_prompt_is_versioned_and_carries_the_papers_constraints() -> None:
    messages = extraction_messages([Utterance("I just moved to Toronto"), Utterance("Nice!", "assistant")])
    assert messages[0]["role"] == "system" and "JSON array" in messages[0]["content"]
    assert "no_longer_has" in messages[0]["content"] and f"at most {MAX_FACTS}" in messages[0]["content"]
    assert messages[1]["content"].endswith("user: I just moved to Toronto\nassistant: Nice!")
    body = request_body("m", messages)
    assert body["temperature"] == TEMPERATURE == 0.1
    assert PROMPT_VERSION == "facts-extract-v1"
    assert extraction_messages([Utterance("a")]) == extraction_messages([Utterance("a")])


def test_paper_example_over_http(server_url: str) -> None:
    llm, transport = extractor(server_url)
    with transport:
        text = "I just moved to Toronto and started a new job at iVedha: ok"
        facts = llm.extract([Utterance(text, source_event_ids=("t1",))])
    assert [(f.relation, f.value, f.confidence, f.scope, f.source_event_ids) for f in facts] == [
        ("lives_in", "Toronto", 0.95, "user", ("t1",)),
        ("works_at", "iVedha", 0.9, "user", ("t1",)),
    ]
    assert llm.last_problems == []
    sent = BODIES[-1]
    assert sent["temperature"] == 0.1 and sent["model"] == "tiny-model"


@pytest.mark.parametrize("case", ["garbage", "not-json", "error", "slow"])
def test_failures_degrade_to_no_facts(server_url: str, case: str) -> None:
    llm, transport = extractor(server_url, timeout_s=0.2)
    with transport:
        assert llm.extract([Utterance(f"I live in Oslo: {case}")]) == []
    assert llm.last_problems, "the reason is kept"


def test_unreachable_endpoint_degrades_to_no_facts() -> None:
    llm, transport = extractor("http://127.0.0.1:9/v1", timeout_s=0.2)
    with transport:
        assert llm.extract([Utterance("I live in Oslo")]) == []
        with pytest.raises(LLMTransportError):
            transport.complete({"model": "m"})
    assert "transport failed" in llm.last_problems[0]


def test_code_fences_are_tolerated(server_url: str) -> None:
    llm, transport = extractor(server_url)
    with transport:
        assert len(llm.extract([Utterance("x: fenced")])) == 2


def test_at_most_ten_facts(server_url: str) -> None:
    llm, transport = extractor(server_url)
    with transport:
        facts = llm.extract([Utterance("x: many")])
    assert len(facts) == MAX_FACTS
    assert "kept the first 10" in llm.last_problems[0]


def test_invalid_items_are_skipped_with_reasons(server_url: str) -> None:
    llm, transport = extractor(server_url)
    with transport:
        facts = llm.extract([Utterance("x: bad-items", agent_id=None)])
    assert [(f.relation, f.value) for f in facts] == [("likes", "tea")]
    assert len(llm.last_problems) == 5
    with_agent = parse_response(
        completion('[{"relation": "works_as", "value": "planner", "confidence": 0.9, "scope": "agent"}]'),
        [Utterance("x", "assistant", "planner-1")],
    )
    assert [(f.scope, f.scope_id) for f in with_agent.facts] == [("agent", "planner-1")]


def test_empty_input_makes_no_call() -> None:
    llm, transport = extractor("http://127.0.0.1:9/v1")
    assert llm.extract([Utterance("   ")]) == []
    transport.close()
