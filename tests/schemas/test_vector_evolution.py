"""Embeddings travel as float32 bytes (NodeUpserted ``vector``, MemoryEvent v4). Events written
before it (v3: ``embedding``, a list of floats) still decode and give the same vector; an older
reader reads a new event with no embedding rather than failing."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
from fastavro import parse_schema, schemaless_reader

from engram.processors.embedding.vectors import node_vector, to_wire
from engram.schemas.changes import change_as
from engram.schemas.codec import HEADER_LEN, AvroCodec, encode_as_writer, history_schema
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.records import NODE_UPSERTED, EventRef, MemoryEvent, NodeUpserted

REF: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 3}
VECTOR = np.array([0.25, -1.5, 3.0, 1e-3], dtype=np.float32)
CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


def v3() -> dict[str, Any]:
    return history_schema("MemoryEvent", 3)


def event(node: NodeUpserted) -> MemoryEvent:
    return memory_event("ada", 5, [REF], NODE_UPSERTED, node)


def test_a_new_event_carries_the_vector_as_float32_bytes() -> None:
    node = node_upserted("n", "event", "USER", 5, text="hi", user_id="ada", vector=to_wire(VECTOR))
    decoded = change_as(CODEC.decode(CODEC.encode(event(node))), NodeUpserted)
    assert decoded is not None and decoded["embedding"] is None
    assert decoded.get("vector") == VECTOR.astype("<f4").tobytes()
    found = node_vector(decoded)
    assert found is not None and np.array_equal(found, VECTOR)


def test_an_event_written_with_a_list_of_floats_gives_the_same_vector() -> None:
    node: dict[str, Any] = {**node_upserted("n", "event", "USER", 5, text="hi", user_id="ada")}
    node["embedding"] = VECTOR.tolist()
    del node["vector"]
    old = {**event(node_upserted("n", "event", "USER", 5)), "change": (NODE_UPSERTED, node)}
    decoded = change_as(CODEC.decode(encode_as_writer(v3(), old)), NodeUpserted)
    assert decoded is not None and decoded.get("vector") is None
    found = node_vector(decoded)
    assert found is not None and np.array_equal(found, VECTOR)


def test_an_older_reader_reads_a_new_event_without_an_embedding() -> None:
    node = node_upserted("n", "event", "USER", 5, text="hi", user_id="ada", vector=to_wire(VECTOR))
    raw = CODEC.encode(event(node))
    old: Any = schemaless_reader(io.BytesIO(raw[HEADER_LEN:]), CODEC.schema, parse_schema(v3()))
    change = old["change"][1] if isinstance(old["change"], tuple) else old["change"]
    assert change["node_id"] == "n" and change["embedding"] is None and "vector" not in change
