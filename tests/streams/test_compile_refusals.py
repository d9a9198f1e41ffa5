"""Every request gets an answer: a request the gate refuses, or an invalid one, is answered on its
requester's topic with the code and reason as well as dead-lettered, when the requester is known.
In process, no broker: `ContextService.answer` returns the records it would send."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator
from typing import Any, cast

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import SLB_DEFAULT, LookasideTable
from engram.processors.trust.authorize import Gate
from engram.processors.trust.tokens import TokenConfig, TokenVerifier, mint
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import CompiledContext, ContextRequest, DeadLetter
from engram.streams.agents.compile import ContextService
from engram.streams.commit import Output
from engram.streams.metrics import EngramMetrics
from tests.compiler.memory import counter, embedder

SECRET = "engram-test-secret-of-at-least-32-bytes"
HS = TokenConfig(SECRET)
NOW_S = 1_800_000_000
REQUESTS: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
CONTEXTS: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
LETTERS: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")


class NoBroker:
    """The compile path's producer, never asked to send here (the test reads what it would send)."""

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Callable[[bool], None]) -> None:
        raise AssertionError(topic)

    def serve_reports(self, timeout_s: float) -> int:
        return 0


@pytest.fixture
def service() -> Iterator[ContextService]:
    view = MemoryView(embedder=embedder(), token_counter=counter())
    slb = LookasideTable(SLB_DEFAULT)
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=slb)
    made = ContextService(view, compiler, slb, NoBroker(), "compiled", "memory", "deadletter",
                          EngramMetrics(), gate=Gate(TokenVerifier(HS)))  # fmt: skip
    yield made
    made.close()


def ask(user: str, token: str | None, **changes: Any) -> ContextRequest:
    request: ContextRequest = {
        "request_id": f"r-{user}", "user_id": user, "session_id": "s", "query": "Where do I live?",
        "token_budget": 500, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
        "event_time_ms": NOW_S * 1000, "token": token,
    }  # fmt: skip
    return cast(ContextRequest, {**request, **changes})


def answer(service: ContextService, request: ContextRequest) -> list[Output]:
    record = Record("requests", 0, 7, NOW_S * 1000, request["user_id"].encode(), REQUESTS.encode(request))
    return asyncio.run(service.answer(record)).outputs


def test_a_request_the_gate_refuses_is_answered_with_the_reason_and_dead_lettered(service: ContextService) -> None:
    outputs = answer(service, ask("bob", mint(HS, "user:ada", NOW_S + 600)))
    assert [o.topic for o in outputs] == ["compiled.user.ada", "deadletter"]
    reply = CONTEXTS.decode(outputs[0].value)
    assert reply["error_code"] == "unauthorized" and reply["request_id"] == "r-bob" and reply["items"] == []
    assert reply["error"] == LETTERS.decode(outputs[1].value)["reason"] == "user:ada may not read user:bob's memory"
    assert outputs[0].key == b"bob"


def test_an_expired_token_is_told_so_on_its_own_topic(service: ContextService) -> None:
    outputs = answer(service, ask("ada", mint(HS, "user:ada", NOW_S - 3600)))
    reply = CONTEXTS.decode(outputs[0].value)
    assert outputs[0].topic == "compiled.user.ada" and reply["error_code"] == "unauthorized"
    assert "expired" in (reply["error"] or "")


def test_an_invalid_request_of_a_known_requester_is_answered_as_invalid(service: ContextService) -> None:
    outputs = answer(service, ask("ada", mint(HS, "user:ada", NOW_S + 600), query="", token_budget=0))
    assert [o.topic for o in outputs] == ["compiled.user.ada", "deadletter"]
    reply = CONTEXTS.decode(outputs[0].value)
    assert reply["error_code"] == "invalid"
    assert "query is empty" in (reply["error"] or "") and "token_budget 0" in (reply["error"] or "")


def test_an_unknown_requester_gets_only_the_dead_letter(service: ContextService) -> None:
    forged = mint(TokenConfig("another-secret-that-is-32-bytes-long!"), "user:ada", NOW_S + 600)
    for token in (None, forged):
        assert [o.topic for o in answer(service, ask("ada", token))] == ["deadletter"]
