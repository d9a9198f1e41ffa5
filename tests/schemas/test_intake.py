"""Intake refuses, with the field's path, any text field holding a NUL (binary data): no store
takes it, and a record that fails its sink batch on every retry would stop the worker for good
(found by `engram bench fuzz`: a binary code file crash-looped the graph sink)."""

from __future__ import annotations

from typing import Any

import pytest

from engram.processors.intake import Accepted, Rejected, admit
from engram.schemas.codec import AvroCodec
from tests.e2e.test_facts_e2e import make_turn


def check(data: bytes, received_ms: int = 0) -> Accepted[dict[str, Any]] | Rejected:
    codec: AvroCodec[dict[str, Any]] = AvroCodec("ConversationTurn")
    return admit(codec, "ConversationTurn", data, received_ms)


def turn(**changes: Any) -> bytes:
    codec: AvroCodec[dict[str, Any]] = AvroCodec("ConversationTurn")
    return codec.encode({**make_turn("ada", 0, "hello"), **changes})


@pytest.mark.parametrize(
    ("changes", "path"),
    [
        ({"content": "PK\x03\x04\x00\x00 zip"}, "content"),
        ({"metadata": {"file": "a\x00b"}}, "metadata.file"),
        ({"causal_parent_ids": ["ok", "bad\x00"]}, "causal_parent_ids[1]"),
    ],
)
def test_a_nul_in_any_text_field_is_refused_with_its_path(changes: dict[str, Any], path: str) -> None:
    verdict = check(turn(**changes))
    assert isinstance(verdict, Rejected) and verdict.reason_class == "invalid"
    assert f"{path} holds a NUL character" in verdict.reason


def test_text_without_nul_and_embeddings_pass() -> None:
    assert isinstance(check(turn(content="naïve ☕ \t\n")), Accepted)


def test_an_input_stamped_far_after_it_arrived_is_refused() -> None:
    stamped = make_turn("ada", 0, "hello")["event_time_ms"]
    day = 24 * 3_600_000
    refused = check(turn(), received_ms=stamped - 2 * day)
    assert isinstance(refused, Rejected) and "after the broker received it" in refused.reason
    skewed = check(turn(), received_ms=stamped - day // 2)
    assert isinstance(skewed, Accepted)  # within the allowed skew
    assert isinstance(check(turn()), Accepted)  # time unknown
