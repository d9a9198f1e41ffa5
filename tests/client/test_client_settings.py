"""The client's Kafka clients and what it refuses to send, without a broker.

Every client it makes (producer, consumer, admin) takes the user's security settings; its consumer
waits briefly for answers unless told otherwise; a turn a worker would refuse (blank, over the one
maximum size) or a record over the producer's limit raises the SDK's own error before anything is
sent; a worker's refusal becomes a typed error."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from engram_client import (
    MAX_TURN_BYTES,
    ClientConfig,
    EngramAuthorizationError,
    EngramClient,
    EngramClientError,
    EngramInputError,
    EngramInvalidRequestError,
)
from engram_client import client as client_module
from engram_client.errors import refusal_of

from engram.processors.intake import MAX_TURN_BYTES as SERVER_MAX_TURN_BYTES

SCRAM = {
    "security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "acme-agent",
    "sasl.password": "not-a-real-password", "ssl.ca.location": "/etc/ssl/ca.pem",
}  # fmt: skip


class FakeProducer:
    made: list[dict[str, Any]] = []

    def __init__(self, settings: dict[str, Any]) -> None:
        FakeProducer.made.append(settings)

    def produce(self, *args: object, **kwargs: object) -> None:
        msg = "nothing may be sent"
        raise AssertionError(msg)

    def flush(self, timeout: float) -> int:
        return 0

    def poll(self, timeout: float) -> int:
        return 0


class FakeAdmin:
    made: list[dict[str, Any]] = []

    def __init__(self, settings: dict[str, Any]) -> None:
        FakeAdmin.made.append(settings)

    def list_topics(self, timeout: float) -> Any:
        class Metadata:
            topics = {"replies": None}

        return Metadata()


@pytest.fixture
def client(monkeypatch: pytest.MonkeyPatch) -> EngramClient:
    FakeProducer.made.clear()
    FakeAdmin.made.clear()
    monkeypatch.setattr(client_module, "Producer", FakeProducer)
    monkeypatch.setattr(client_module, "AdminClient", FakeAdmin)
    return EngramClient(ClientConfig("broker:9093", security_settings=SCRAM, reply_topic="replies"))


def test_the_admin_client_takes_the_security_settings(client: EngramClient) -> None:
    client._create_if_missing("replies")
    assert FakeAdmin.made == [{"bootstrap.servers": "broker:9093", **SCRAM}]


def test_every_client_takes_the_security_settings(client: EngramClient) -> None:
    assert FakeProducer.made and SCRAM.items() <= FakeProducer.made[0].items()
    for role in ("producer", "consumer", "admin"):
        assert SCRAM.items() <= client.config.client_settings(role).items(), role


def test_answers_are_fetched_with_a_short_wait_unless_the_user_says_otherwise() -> None:
    consumer = ClientConfig("b:1").client_settings("consumer")
    assert consumer["fetch.wait.max.ms"] <= 10 and consumer["socket.nagle.disable"] is True
    assert ClientConfig("b:1").client_settings("producer")["linger.ms"] == 0
    mine = ClientConfig("b:1", consumer_settings={"fetch.wait.max.ms": 500}, producer_settings={"linger.ms": 5})
    assert mine.client_settings("consumer")["fetch.wait.max.ms"] == 500
    assert mine.client_settings("producer")["linger.ms"] == 5


def test_the_client_and_the_worker_have_one_maximum_turn_size() -> None:
    assert MAX_TURN_BYTES == SERVER_MAX_TURN_BYTES


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("", "empty or only whitespace"),
        (" \n\t ", "empty or only whitespace"),
        ("é" * (MAX_TURN_BYTES // 2 + 1), f"over the {MAX_TURN_BYTES}"),  # bytes, not characters
    ],
)
def test_a_turn_a_worker_would_refuse_is_refused_before_it_is_sent(
    client: EngramClient, content: str, reason: str
) -> None:
    with pytest.raises(EngramInputError, match=reason) as raised:
        asyncio.run(client.publish_turn(user_id="ada", session_id="s", turn_index=0, content=content))
    assert isinstance(raised.value, EngramClientError) and isinstance(raised.value, ValueError)


def test_a_record_over_the_producers_limit_raises_the_sdks_error_not_kafkas(client: EngramClient) -> None:
    big = "x = 1\n" * 400_000  # 2.4 MB
    with pytest.raises(EngramInputError, match=r"over the producer's message\.max\.bytes \(1000000\)"):
        asyncio.run(client.publish_code_change(repo="r", path="big.py", language="python", content=big, commit="c1"))


def test_a_refusal_is_a_typed_error() -> None:
    assert refusal_of({"request_id": "r", "items": [], "error_code": None}) is None
    refused = refusal_of({"request_id": "r", "error_code": "unauthorized", "error": "token expired"})
    assert isinstance(refused, EngramAuthorizationError) and isinstance(refused, EngramClientError)
    assert (refused.code, refused.reason, refused.request_id) == ("unauthorized", "token expired", "r")
    assert isinstance(refusal_of({"request_id": "r", "error_code": "invalid", "error": "x"}), EngramInvalidRequestError)
