"""The client carries the server's contracts, byte for byte, and speaks the server's encoding."""

from __future__ import annotations

from pathlib import Path

import pytest
from engram_client.codec import ClientCodecError, decode, encode

from engram.schemas.codec import AvroCodec

REPO = Path(__file__).resolve().parents[2]
CARRIED = sorted(str(p.relative_to(REPO / "client/engram_client/avro")) for p in
                 (REPO / "client/engram_client/avro").rglob("*.avsc"))  # fmt: skip
READ = ("CompiledContext", "DeadLetter")  # what the client reads: every older writer of these too


def test_the_client_carries_exactly_the_contracts_it_uses() -> None:
    current = ["CodeChange.avsc", "CompiledContext.avsc", "ContextRequest.avsc", "ConversationTurn.avsc",
               "DeadLetter.avsc"]  # fmt: skip
    older = sorted(
        f"history/{p.name}" for name in READ for p in (REPO / "engram/schemas/avro/history").glob(f"{name}.v*")
    )
    assert older, "the server keeps older writers of what the client reads"
    assert sorted(current + older) == CARRIED


@pytest.mark.parametrize("name", CARRIED)
def test_each_carried_contract_is_the_servers(name: str) -> None:
    carried = (REPO / "client/engram_client/avro" / name).read_bytes()
    assert carried == (REPO / "engram/schemas/avro" / name).read_bytes(), (
        f"copy engram/schemas/avro/{name} into the client"
    )


def test_what_the_client_writes_the_server_reads_and_back() -> None:
    turn: dict[str, object] = {
        "turn_id": "t1", "user_id": "ada", "agent_id": None, "flow_id": None, "session_id": "s", "turn_index": 0,
        "role": "user", "content": "I moved to Berlin.", "event_time_ms": 1, "layer": "USER",
        "causal_parent_ids": [], "tool_calls": [], "metadata": {}, "instance": "team:payments", "token": None,
    }  # fmt: skip
    turns: AvroCodec[dict[str, object]] = AvroCodec("ConversationTurn")
    assert turns.decode(encode("ConversationTurn", turn)) == turn
    compiled: AvroCodec[dict[str, object]] = AvroCodec("CompiledContext")
    context = {
        "request_id": "r", "user_id": "ada", "session_id": "s", "query": "q", "route": "FACTUAL", "route_reason": "",
        "intent": "answer", "cache_hit": False, "partial": False, "fallbacks": [], "items": [], "total_tokens": 0,
        "token_budget": 100, "timings_ms": {}, "event_time_ms": 1,
    }  # fmt: skip
    missing = [f["name"] for f in compiled.schema["fields"] if f["name"] not in context and "default" not in f]
    assert not missing, f"fill {missing}"
    assert decode("CompiledContext", compiled.encode(context))["request_id"] == "r"
    with pytest.raises(ClientCodecError):
        decode("CompiledContext", b"\xc3\x01" + b"\x00" * 8 + b"junk")
