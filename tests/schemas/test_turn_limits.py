"""Limits that agree: intake refuses a turn over `MAX_TURN_BYTES` (UTF-8 bytes) or with nothing
to say, with the reason; every turn it admits goes through the Trace (a 950 KB turn used to pass
intake and fail there with bpe-openai's TokenLimitError), and the token counter counts any text."""

from __future__ import annotations

import random
from typing import Any, cast

import pytest

from engram.processors.intake import MAX_TURN_BYTES, Accepted, Rejected, admit
from engram.processors.tokens import PIECE_CHARS, BpeTokenCounter, pieces
from engram.processors.trace.builder import TraceBuilder
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, NodeUpserted
from tests.e2e.test_facts_e2e import make_turn

TURNS: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")


def verdict(**changes: Any) -> Accepted[ConversationTurn] | Rejected:
    turn = cast(ConversationTurn, {**make_turn("ada", 0, "hello"), **changes})
    return admit(TURNS, "ConversationTurn", TURNS.encode(turn))


@pytest.mark.parametrize("content", ["", " ", "\n\t  \n"])
def test_an_empty_or_blank_turn_is_refused_with_the_reason(content: str) -> None:
    refused = verdict(content=content)
    assert isinstance(refused, Rejected) and refused.reason_class == "invalid"
    assert "content is empty or only whitespace" in refused.reason


def test_an_assistant_turn_that_only_calls_a_tool_is_admitted() -> None:
    call = {"call_id": "c1", "name": "weather", "arguments_json": "{}"}
    assert isinstance(verdict(content="", role="assistant", tool_calls=[call]), Accepted)


def test_the_limit_is_in_bytes_and_refused_with_the_reason() -> None:
    assert isinstance(verdict(content="a" * MAX_TURN_BYTES), Accepted)
    refused = verdict(content="é" * (MAX_TURN_BYTES // 2 + 1))  # fewer characters, more bytes
    assert isinstance(refused, Rejected)
    assert f"content is {MAX_TURN_BYTES + 2} bytes of UTF-8 (max {MAX_TURN_BYTES}" in refused.reason


def worst_case_text(size_bytes: int, seed: int = 7) -> str:
    """Random CJK characters (3 bytes each, about a token per byte in cl100k): the most tokens a
    text of this size can give."""
    rng = random.Random(seed)
    return "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(size_bytes // 3))


def test_the_largest_turn_intake_admits_goes_through_the_trace() -> None:
    content = worst_case_text(MAX_TURN_BYTES)
    admitted = verdict(content=content)
    assert isinstance(admitted, Accepted)
    events = TraceBuilder().apply(admitted.record, {"topic": "engram.turns", "partition": 0, "offset": 0})
    nodes = [node for e in events if (node := change_as(e, NodeUpserted)) is not None]
    assert [node["text"] for node in nodes if node["kind"] == "event"] == [content]


def test_the_counter_counts_texts_past_bpe_openais_limit() -> None:
    counter = BpeTokenCounter()
    huge = worst_case_text(900_000)  # ~700k tokens: bpe-openai alone refuses more than 200k
    assert counter.count(huge) > 200_000
    assert counter.count_batch(["hello world", huge]) == [2, counter.count(huge)]
    english = "I moved to Berlin last spring. " * 5_000
    assert len(english) > PIECE_CHARS and counter.count(english) == 35_001  # cut before a space: exact


@pytest.mark.parametrize("text", ["", "x" * (3 * PIECE_CHARS + 5), ("word " * PIECE_CHARS), "a\nb " * PIECE_CHARS])
def test_pieces_cover_the_text_in_order_within_the_size(text: str) -> None:
    parts = list(pieces(text))
    assert "".join(parts) == text and all(len(p) <= PIECE_CHARS for p in parts)
