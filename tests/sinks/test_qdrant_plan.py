"""Coalescing a batch into vector writes, without an engine."""

from __future__ import annotations

import pytest

from engram.processors.embedding.vectors import to_wire
from engram.schemas.events import memory_event, node_dormant, node_reawakened, node_removed, node_upserted
from engram.schemas.records import NODE_DORMANT, NODE_REAWAKENED, NODE_REMOVED, NODE_UPSERTED, EventRef, MemoryEvent
from engram.sinks.qdrant.plan import collection_for_kind, plan_batch
from tests.sinks.events import subject_erased

REF: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 3}]
NODE = "2f1e7a52-8d3b-5b7e-9a6e-0d6f4c1b2a90"


def _upsert(kind: str = "event", embedding: list[float] | None = None) -> MemoryEvent:
    node = node_upserted(
        NODE, kind, "USER", 5, text="hi", user_id="u", vector=None if embedding is None else to_wire(embedding)
    )
    return memory_event("u", 5, REF, NODE_UPSERTED, node)


def _removed(kind: str = "event") -> MemoryEvent:
    return memory_event("u", 6, REF, NODE_REMOVED, node_removed(NODE, kind, "pruned"))


def _dormant(asleep: bool) -> MemoryEvent:
    if asleep:
        return memory_event("u", 7, REF, NODE_DORMANT, node_dormant(NODE, "idle"))
    return memory_event("u", 7, REF, NODE_REAWAKENED, node_reawakened(NODE, "used"))


def test_collection_per_kind_is_a_safe_name() -> None:
    assert collection_for_kind("event") == "engram_event"
    assert collection_for_kind("code_chunk") == "engram_code_chunk"
    assert collection_for_kind("../Code Chunk!") == "engram_code_chunk"


def test_upsert_carries_tenant_layer_time_tokens_and_provenance() -> None:
    plan = plan_batch([_upsert(embedding=[0.6, 0.8])])
    point = plan.upserts["engram_event"][NODE]
    assert list(point.vector) == pytest.approx([0.6, 0.8], rel=1e-6)  # float32 on the wire, as Avro floats were
    payload = point.payload
    assert (payload["user_id"], payload["layer"], payload["kind"]) == ("u", "USER", "event")
    assert (payload["event_time_ms"], payload["tokens"], payload["dormant"]) == (5, 0, 0)
    assert payload["sources"] == [{"topic": "engram.turns", "partition": 0, "offset": 3}]


def test_last_event_about_a_point_wins() -> None:
    removed_after = plan_batch([_upsert(embedding=[1.0, 0.0]), _removed()])
    assert removed_after.upserts.get("engram_event", {}) == {}
    assert removed_after.deletes == {"engram_event": {NODE}}

    upserted_after = plan_batch([_removed(), _upsert(embedding=[1.0, 0.0])])
    assert set(upserted_after.upserts["engram_event"]) == {NODE}
    assert upserted_after.deletes["engram_event"] == set()


def test_dormancy_rides_on_a_pending_upsert_or_becomes_a_flag() -> None:
    pending = plan_batch([_upsert(embedding=[1.0, 0.0]), _dormant(True)])
    assert pending.upserts["engram_event"][NODE].payload["dormant"] == 1
    assert pending.flags == {}

    stored = plan_batch([_dormant(True), _dormant(False)])
    assert stored.flags == {NODE: False}

    gone = plan_batch([_removed(), _dormant(True)])
    assert gone.flags == {}


def test_nodes_without_embedding_have_no_point() -> None:
    plan = plan_batch([_upsert(embedding=None)])
    assert plan.empty
    assert plan.skipped == 1


def _erased(user: str = "u") -> MemoryEvent:
    return subject_erased(user, 8, 4)


def test_an_erasure_closes_the_writes_planned_so_far() -> None:
    plan = plan_batch([_upsert(embedding=[1.0, 0.0]), _erased(), _upsert(embedding=[0.0, 1.0]), _dormant(True)])
    assert [list(plan.upserts["engram_event"][NODE].vector)] == [[1.0, 0.0]]
    (erasure,) = plan.erasures
    assert erasure.user_id == "u"
    after = erasure.then.upserts["engram_event"][NODE]
    assert (list(after.vector), after.payload["dormant"]) == ([0.0, 1.0], 1)


def test_coalescing_never_crosses_an_erasure() -> None:
    plan = plan_batch([_upsert(embedding=[1.0, 0.0]), _erased(), _removed(), _erased("v")])
    assert set(plan.upserts["engram_event"]) == {NODE}  # written, then erased: the order is kept
    assert [e.user_id for e in plan.erasures] == ["u", "v"]
    assert plan.erasures[0].then.deletes == {"engram_event": {NODE}}
    assert plan.erasures[1].then.empty


def test_a_batch_of_only_an_erasure_is_not_empty() -> None:
    plan = plan_batch([_erased()])
    assert not plan.empty
    assert plan.writes_nothing()
    assert plan.skipped == 0
