"""The LoCoMo reader: sessions, ids, roles, times and evidence ids."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.benchmarks.locomo_reader import (
    LocomoFormatError,
    conversation_turns,
    evidence_ids,
    flat_conversations,
    session_time_ms,
)
from engram.schemas.records import ConversationTurn


def test_every_real_session_turn_is_read(
    locomo_raw: dict[str, dict[str, object]], locomo_turns: dict[str, list[ConversationTurn]]
) -> None:
    assert sum(len(t) for t in locomo_turns.values()) == 2760  # PROVENANCE.md: 5 files, 2,760 turns
    for conv, data in locomo_raw.items():
        turns = locomo_turns[conv]
        assert {t["user_id"] for t in turns} == {conv}
        assert [t["metadata"]["dia_id"] for t in turns[:2]] == ["D1:1", "D1:2"]
        assert turns[0]["turn_id"] == f"{conv}:D1:1" and turns[0]["session_id"] == f"{conv}:session_1"
        speakers = {t["metadata"]["speaker"]: t["role"] for t in turns}
        assert speakers == {str(data["speaker_a"]): "user", str(data["speaker_b"]): "assistant"}
        assert len({t["turn_id"] for t in turns}) == len(turns)


def test_times_increase_within_a_session_and_follow_the_session_date(
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    turns = locomo_turns["26"]
    first = datetime.fromtimestamp(turns[0]["event_time_ms"] / 1000, tz=UTC)
    assert first == datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # "1:56 pm on 8 May, 2023"
    for a, b in zip(turns, turns[1:], strict=False):
        if a["session_id"] == b["session_id"]:
            assert b["event_time_ms"] > a["event_time_ms"] and b["turn_index"] == a["turn_index"] + 1


def test_date_keys_without_a_session_are_ignored() -> None:
    data = {
        "speaker_a": "A",
        "speaker_b": "B",
        "session_1_date_time": "9:00 am on 1 January, 2024",
        "session_1": [{"speaker": "B", "dia_id": "D1:1", "text": "hi", "blip_caption": "a photo of a cat"}],
        "session_2_date_time": "9:00 am on 2 January, 2024",
    }
    turns = conversation_turns(data, "c")
    assert len(turns) == 1 and turns[0]["role"] == "assistant"
    assert turns[0]["metadata"]["blip_caption"] == "a photo of a cat" and turns[0]["content"] == "hi"
    assert conversation_turns(data, "c", caption_in_content=True)[0]["content"] == "hi [image: a photo of a cat]"


def test_malformed_input_raises_a_typed_error() -> None:
    with pytest.raises(LocomoFormatError):
        session_time_ms("yesterday at noon")
    with pytest.raises(LocomoFormatError):
        conversation_turns({"session_1": []}, "c")


def test_evidence_ids_are_normalised() -> None:
    assert evidence_ids(["D8:6; D9:17", "D:11:26", "D30:05", "D1:2 D1:3", "D"]) == [
        "D8:6",
        "D9:17",
        "D11:26",
        "D30:5",
        "D1:2",
        "D1:3",
    ]


def test_both_release_shapes_give_the_same_flat_conversations(locomo_raw: dict[str, dict[str, object]]) -> None:
    samples = [
        {"sample_id": f"conv-{conv}", "conversation": {k: v for k, v in data.items() if k != "qa"}, "qa": data["qa"]}
        for conv, data in sorted(locomo_raw.items())
    ]
    listed = flat_conversations(samples, "locomo10")
    assert [name for name, _ in listed] == [f"conv-{conv}" for conv in sorted(locomo_raw)]
    for (_, flat), conv in zip(listed, sorted(locomo_raw), strict=True):
        assert flat == locomo_raw[conv]
        assert conversation_turns(flat, conv) == conversation_turns(locomo_raw[conv], conv)
    assert flat_conversations(locomo_raw["26"], "26") == [("26", locomo_raw["26"])]
    for junk in ({"not": "a conversation"}, [1, {"conversation": "x"}], "text", None):
        assert flat_conversations(junk, "junk") == []
