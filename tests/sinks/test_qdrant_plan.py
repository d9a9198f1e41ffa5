"""Coalescing a batch into vector writes, without an engine."""

from __future__ import annotations

from schemas.events import memory_event, node_dormant, node_reawakened, node_removed, node_upserted
from schemas.records import NODE_DORMANT, NODE_REAWAKENED, NODE_REMOVED, NODE_UPSERTED, MemoryEvent
from sinks.qdrant.plan import collection_for_kind, plan_batch

REF = [{"topic": "engram.turns", "partition": 0, "offset": 3}]
NODE = "2f1e7a52-8d3b-5b7e-9a6e-0d6f4c1b2a90"


def _upsert(kind: str = "event", embedding: list[float] | None = None) -> MemoryEvent:
    node = node_upserted(NODE, kind, "USER", 5, text="hi", user_id="u", embedding=embedding or [1.0, 0.0])
    return memory_event("u", 5, REF, NODE_UPSERTED, node)  # type: ignore[arg-type]


def test_collection_per_kind_is_a_safe_name() -> None:
    assert collection_for_kind("event") == "engram_event"
    assert collection_for_kind("code_chunk") == "engram_code_chunk"
    assert collection_for_kind("../Code Chunk!") == "engram_code_chunk"
