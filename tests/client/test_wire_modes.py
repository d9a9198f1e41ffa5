"""The SDK speaks both codec modes a worker runs in, reads what an older worker wrote, and never
drops an answer it cannot read: the `ask` it answers raises `EngramDecodeError` at once.

The registry here is `engram.infra.schema_registry` (HTTP, shared between clients), as a worker process
and an app would share a real one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from engram_client import (
    ClientCodec,
    ClientCodecError,
    ClientConfig,
    EngramClient,
    EngramClientError,
    EngramDecodeError,
    EngramInputError,
)
from engram_client import client as client_module
from engram_client.codec import leading_string

from engram.infra.schema_registry import schema_registry
from engram.processors.intake import Rejected, dead_letter
from engram.schemas.codec import AvroCodec, CodecConfig, ConfluentCodec, encode_as_writer, history_schema
from tests.client.test_client_settings import FakeAdmin, FakeProducer

TURNS, COMPILED = "engram.turns", "engram.context.compiled.user.ada"
TURN: dict[str, Any] = {
    "turn_id": "s1-0", "user_id": "ada", "agent_id": None, "flow_id": None, "session_id": "s1", "turn_index": 0,
    "role": "user", "content": "I moved to Berlin.", "event_time_ms": 1, "layer": "USER", "causal_parent_ids": [],
    "tool_calls": [], "metadata": {}, "instance": None, "token": None,
}  # fmt: skip
CONTEXT_V1: dict[str, Any] = {
    "request_id": "req-1", "user_id": "ada", "session_id": "s1", "query": "where?", "route": "FACTUAL",
    "route_reason": "", "intent": "answer", "cache_hit": False, "partial": False, "fallbacks": [], "token_budget": 100,
    "total_tokens": 0, "items": [], "timings_ms": {},
}  # fmt: skip
CONTEXT = {**CONTEXT_V1, "error_code": None, "error": None}
NOT_TEXT: Any = {"n": 1}  # metadata values are strings


@pytest.fixture
def registry() -> Iterator[str]:
    with schema_registry() as url:
        yield url


def test_in_registry_mode_the_sdk_and_a_worker_read_each_other(registry: str) -> None:
    sdk = ClientCodec(registry)
    worker_turns: ConfluentCodec[Any] = ConfluentCodec("ConversationTurn", TURNS, CodecConfig(registry))
    sent = sdk.encode("ConversationTurn", TURNS, TURN)
    assert sent[0] == 0, "the Confluent wire format starts with magic byte 0"
    assert worker_turns.decode(sent) == TURN
    worker_replies: ConfluentCodec[Any] = ConfluentCodec(
        "CompiledContext", "engram.context.compiled", CodecConfig(registry)
    )
    assert sdk.decode("CompiledContext", COMPILED, worker_replies.encode(CONTEXT))["request_id"] == "req-1"


def test_an_sdk_reads_contexts_in_both_framings_whatever_it_writes(registry: str) -> None:
    single: AvroCodec[Any] = AvroCodec("CompiledContext")
    assert ClientCodec(registry).decode("CompiledContext", COMPILED, single.encode(CONTEXT))["user_id"] == "ada"


def test_a_registry_framed_answer_without_a_registry_names_the_missing_setting(registry: str) -> None:
    framed = ConfluentCodec[Any]("CompiledContext", "engram.context.compiled", CodecConfig(registry)).encode(CONTEXT)
    with pytest.raises(ClientCodecError, match="set ClientConfig.schema_registry_url"):
        ClientCodec().decode("CompiledContext", COMPILED, framed)
    assert leading_string(framed) == "req-1"


def test_the_sdk_reads_a_context_the_previous_schema_version_wrote() -> None:
    old = encode_as_writer(history_schema("CompiledContext", 1), CONTEXT_V1)
    read = ClientCodec().decode("CompiledContext", COMPILED, old)
    assert read["request_id"] == "req-1" and read["error_code"] is None and read["error"] is None


def test_the_config_reads_the_workers_settings_by_their_names() -> None:
    env = {"ENGRAM_BOOTSTRAP_SERVERS": "k:9093", "ENGRAM_SCHEMA_REGISTRY_URL": "http://sr:8081",
           "ENGRAM_TOPIC_PREFIX": "t1", "ENGRAM_TOKEN": "tok"}  # fmt: skip
    config = ClientConfig.from_env(env, reply_topic="r")
    assert (config.bootstrap_servers, config.schema_registry_url, config.topic_prefix) == (
        "k:9093",
        "http://sr:8081",
        "t1",
    )
    assert (config.token, config.reply_topic) == ("tok", "r")
    assert ClientConfig.from_env({}).schema_registry_url is None


class Message:
    def __init__(self, value: bytes, key: bytes | None = b"ada") -> None:
        self._value, self._key = value, key

    def value(self) -> bytes:
        return self._value

    def key(self) -> bytes | None:
        return self._key

    def topic(self) -> str:
        return COMPILED

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 41


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> EngramClient:
    monkeypatch.setattr(client_module, "Producer", FakeProducer)
    monkeypatch.setattr(client_module, "AdminClient", FakeAdmin)
    return EngramClient(ClientConfig("broker:9093", reply_topic=COMPILED))


async def _receive(client: EngramClient, message: Message, waiting: list[str]) -> dict[str, BaseException | None]:
    loop = asyncio.get_running_loop()
    client._loop = loop
    futures = {rid: loop.create_future() for rid in waiting}
    client._waiting.update(futures)
    client._receive(message)
    await asyncio.sleep(0.01)
    return {rid: f.exception() if f.done() else None for rid, f in futures.items()}


def test_an_answer_the_sdk_cannot_read_fails_its_ask_at_once(client: EngramClient, registry: str) -> None:
    framed = ConfluentCodec[Any]("CompiledContext", "engram.context.compiled", CodecConfig(registry)).encode(CONTEXT)
    failed = asyncio.run(_receive(client, Message(framed), ["req-1", "req-2"]))
    error = failed["req-1"]
    assert isinstance(error, EngramDecodeError) and error.request_id == "req-1"
    assert (error.topic, error.partition, error.offset) == (COMPILED, 0, 41)
    assert "schema_registry_url" in str(error)
    assert failed["req-2"] is None, "another ask's answer may still come"


def test_bytes_with_no_readable_request_id_fail_every_waiting_ask(client: EngramClient) -> None:
    failed = asyncio.run(_receive(client, Message(b"\x07junk"), ["a", "b"]))
    assert all(isinstance(e, EngramDecodeError) and e.request_id is None for e in failed.values())


def test_a_follower_of_the_user_raises_too(client: EngramClient) -> None:
    async def follow() -> BaseException | None:
        client._loop = asyncio.get_running_loop()
        contexts = client.contexts("ada")
        first = asyncio.ensure_future(anext(contexts))
        await asyncio.sleep(0)
        client._receive(Message(b"\x07junk"))
        try:
            await asyncio.wait_for(first, 1.0)
        except EngramDecodeError as exc:
            return exc
        return None

    assert isinstance(asyncio.run(follow()), EngramDecodeError)


def test_the_sdk_reads_dead_letters_with_their_reason_class(client: EngramClient) -> None:
    rejected = Rejected("invalid", "invalid ConversationTurn: content is empty", "ValidationError")
    letter = dead_letter(rejected, "engram.turns", 1, 7, b"ada", b"\xc3\x01raw", "decode")
    read = client.read_dead_letter(AvroCodec[Any]("DeadLetter").encode(letter), time_ms=5)
    assert (read.reason_class, read.reason, read.source, read.time_ms) == (
        "invalid", "invalid ConversationTurn: content is empty", "engram.turns/1/7", 5)  # fmt: skip
    older = encode_as_writer(history_schema("DeadLetter", 1), {k: v for k, v in letter.items() if k != "reason_class"})
    assert client.read_dead_letter(older).reason_class == ""


def test_a_registry_that_does_not_answer_is_not_the_records_fault(client: EngramClient) -> None:  # fakes the broker
    down = EngramClient(ClientConfig("broker:9093", schema_registry_url="http://127.0.0.1:1",
                                     schema_registry_settings={"max.retries": 0}))  # fmt: skip
    with pytest.raises(EngramClientError, match="registry http://127.0.0.1:1") as raised:
        asyncio.run(down.publish_turn(user_id="ada", session_id="s1", turn_index=0, content="hi"))
    assert not isinstance(raised.value, EngramInputError)
    with pytest.raises(EngramInputError, match="cannot encode ConversationTurn"):  # it breaks its contract
        asyncio.run(down.publish_turn(user_id="ada", session_id="s1", turn_index=0, content="hi", metadata=NOT_TEXT))
