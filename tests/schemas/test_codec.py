"""The Avro contracts: every schema round-trips, old data decodes, incompatible changes are refused."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from engram.schemas.codec import (
    SCHEMA_NAMES,
    AvroCodec,
    CodecConfig,
    ConfluentCodec,
    IncompatibleSchemaError,
    MalformedMessageError,
    UnknownSchemaError,
    make_codec,
    schema_json,
)
from tests.schemas.avro_strategies import record_strategy

# The MemoryEvent union yields (name, record) tuples for records: that is the decoded form too.
UNION_RECORD_SCHEMAS = {"MemoryEvent"}


def _roundtrip_one(name: str, data: st.DataObject) -> None:
    codec: AvroCodec[Any] = AvroCodec(name)
    record = data.draw(record_strategy(schema_json(name)))
    assert codec.decode(codec.encode(record)) == record


@pytest.mark.parametrize("name", SCHEMA_NAMES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_every_schema_round_trips(name: str, data: st.DataObject) -> None:
    _roundtrip_one(name, data)


def test_single_object_header_is_the_avro_spec_header() -> None:
    codec: AvroCodec[Any] = AvroCodec("DeadLetter")
    letter = {
        "topic": "t",
        "partition": 0,
        "offset": 1,
        "key": None,
        "value": b"x",
        "reason": "r",
        "error_type": "E",
        "stage": "decode",
    }
    encoded = codec.encode(letter)
    assert encoded[:2] == b"\xc3\x01"
    assert encoded[2:10] == codec.fingerprint


V1_TURN = {
    "turn_id": "t1",
    "user_id": "u1",
    "agent_id": None,
    "session_id": "s1",
    "turn_index": 3,
    "role": "assistant",
    "content": "hello",
    "event_time_ms": 1_700_000_000_000,
    "layer": "TEAM",
    "causal_parent_ids": ["t0"],
}


def _encode_with_writer(writer_schema: dict[str, Any], record: dict[str, Any]) -> bytes:
    """Encode as an old producer would have: its own schema, its own fingerprint."""
    from engram.schemas.codec import encode_as_writer

    return encode_as_writer(writer_schema, record)


def test_old_writer_schema_decodes_under_current_reader() -> None:
    from importlib import resources

    v1 = json.loads(
        resources.files("engram.schemas").joinpath("avro", "history", "ConversationTurn.v1.avsc").read_text("utf-8")
    )
    decoded = AvroCodec[Any]("ConversationTurn").decode(_encode_with_writer(v1, V1_TURN))
    assert decoded["content"] == "hello" and decoded["layer"] == "TEAM"
    # Fields added since v1 take their defaults.
    assert decoded["tool_calls"] == [] and decoded["metadata"] == {} and decoded["flow_id"] is None


def test_a_memory_event_written_before_rule_rejected_existed_decodes_under_current_reader() -> None:
    """MemoryEvent v1 (no RuleRejected in the change union) is still readable: the union grew at
    its end, so an old writer's branch index names the same record."""
    from importlib import resources

    from engram.schemas.events import memory_event, rule_committed
    from engram.schemas.records import EventRef

    v1 = json.loads(
        resources.files("engram.schemas").joinpath("avro", "history", "MemoryEvent.v1.avsc").read_text("utf-8")
    )
    ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 3}
    event = memory_event("ada", 5, [ref], "engram.RuleCommitted", rule_committed("r", "tea", "3x", ["n"]))
    decoded = AvroCodec[Any]("MemoryEvent").decode(_encode_with_writer(v1, dict(event)))
    assert decoded["change"] == ("engram.RuleCommitted", event["change"][1])


def test_incompatible_writer_schema_is_rejected() -> None:
    """A writer that changed a field's type (string -> int) cannot be read as the current schema."""
    bad = copy.deepcopy(schema_json("ConversationTurn"))
    bad["fields"] = [f for f in bad["fields"] if f["name"] != "tool_calls"]
    for field in bad["fields"]:
        if field["name"] == "content":
            field["type"] = "int"
    record: dict[str, Any] = {**V1_TURN, "content": 42, "flow_id": None, "metadata": {}}
    data = _encode_with_writer(bad, record)
    with pytest.raises(UnknownSchemaError):
        AvroCodec[Any]("ConversationTurn").decode(data)  # never registered: refused by fingerprint
    with pytest.raises(IncompatibleSchemaError):
        AvroCodec[Any]("ConversationTurn", extra_writer_schemas=[bad]).decode(data)


@pytest.mark.parametrize("garbage", [b"", b"not avro", b"\xc3\x01short", b"\xc3\x01" + b"\x00" * 8 + b"\xff"])
def test_garbage_is_a_typed_error(garbage: bytes) -> None:
    with pytest.raises((MalformedMessageError, UnknownSchemaError)):
        AvroCodec[Any]("ConversationTurn").decode(garbage)


def test_truncated_body_is_malformed() -> None:
    codec: AvroCodec[Any] = AvroCodec("ConversationTurn")
    full = codec.encode({**V1_TURN, "flow_id": None, "tool_calls": [], "metadata": {"k": "v"}})
    with pytest.raises(MalformedMessageError):
        codec.decode(full[:-3])


@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_confluent_wire_format_round_trips_with_mock_registry(data: st.DataObject) -> None:
    codec = make_codec("ContextRequest", "engram.context.requests", CodecConfig(registry_url="mock://engram-test"))
    assert isinstance(codec, ConfluentCodec)
    record = data.draw(record_strategy(schema_json("ContextRequest")))
    encoded = codec.encode(record)
    assert encoded[0] == 0  # Confluent magic byte, then a 4-byte schema id
    assert codec.decode(encoded) == record


def test_a_registry_codec_reads_single_object_messages_of_known_schemas_and_nothing_else() -> None:
    """A producer not told of the registry is understood, so its request is answered (in the
    registry's format, which tells it what it lacks) instead of dead-lettered unanswered."""
    codec = make_codec("DeadLetter", "engram.deadletter", CodecConfig(registry_url="mock://engram-test2"))
    letter = {"topic": "t", "partition": 0, "offset": 1, "key": None, "value": b"x", "reason": "r", "error_type": "E",
              "stage": "decode", "reason_class": "invalid"}  # fmt: skip
    assert codec.decode(AvroCodec[Any]("DeadLetter").encode(letter)) == letter
    with pytest.raises(UnknownSchemaError):
        codec.decode(b"\xc3\x01" + b"\x00" * 20)
    with pytest.raises(MalformedMessageError):
        codec.decode(b"\x07" + b"\x00" * 20)


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.one_of(st.text(max_size=30), st.integers()), min_size=1, max_size=5))
def test_stable_id_is_rfc4122_uuid5(parts: list[object]) -> None:
    import uuid

    from engram.schemas.events import ENGRAM_NS, stable_id

    assert stable_id(*parts) == str(uuid.uuid5(ENGRAM_NS, "\x1f".join(str(p) for p in parts)))
