"""Both `VectorStore` adapters behave alike: qdrant-edge in process, qdrant-client in local mode.

Small data only: qdrant-client local mode is slow. The larger runs are in test_qdrant_sink.py.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from qdrant_client.http.exceptions import UnexpectedResponse

from engram.schemas.events import stable_id
from engram.sinks.base import SinkBackpressureError, SinkTransientError
from engram.sinks.qdrant.client import ClientVectorStore, QdrantServerConfig, _raise_sink_error
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.store import (
    InvalidCollectionNameError,
    PointFilter,
    UnboundedDeleteError,
    VectorDimensionError,
    VectorPoint,
    VectorStore,
    VectorStoreLockedError,
)

StoreFactory = Callable[[Path], VectorStore]

FACTORIES: dict[str, StoreFactory] = {
    "edge": lambda folder: EdgeVectorStore(folder),
    "client-local": lambda folder: ClientVectorStore(QdrantServerConfig(path=str(folder))),
}


@pytest.fixture(params=sorted(FACTORIES))
def store(request: pytest.FixtureRequest, qdrant_folder: Path) -> Iterator[VectorStore]:
    factory = FACTORIES[str(request.param)]
    s = factory(qdrant_folder)
    s.open()
    try:
        yield s
    finally:
        s.close()


def _points(n: int) -> list[VectorPoint]:
    out = []
    for i in range(n):
        vector = [1.0, float(i) / n, 0.0, 0.0] if i % 2 == 0 else [0.0, 0.0, 1.0, float(i) / n]
        payload = {"user_id": f"u{i % 3}", "layer": "USER" if i % 4 < 2 else "TEAM", "n": i, "dormant": int(i == 0)}
        out.append(VectorPoint(stable_id("p", i), vector, payload))
    return out


def test_upsert_search_and_filter_by_tenant_and_layer(store: VectorStore) -> None:
    store.ensure_collection("engram_event", 4)
    points = _points(30)
    store.upsert("engram_event", points)
    assert store.collections() == ["engram_event"]
    assert store.count("engram_event") == 30

    hits = store.search("engram_event", [1.0, 0.0, 0.0, 0.0], 50, PointFilter.tenant("u1", ["TEAM"]))
    expected = {p.id for p in points if p.payload["user_id"] == "u1" and p.payload["layer"] == "TEAM"}
    assert {h.id for h in hits} == expected
    assert all(h.payload["user_id"] == "u1" for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)

    awake = PointFilter.tenant("u0")
    assert store.count("engram_event", awake) == sum(1 for p in points if p.payload["user_id"] == "u0") - 1
    everyone = PointFilter.tenant("u0", include_dormant=True)
    assert store.count("engram_event", everyone) == sum(1 for p in points if p.payload["user_id"] == "u0")


def test_reupsert_is_idempotent_and_replaces_payload(store: VectorStore) -> None:
    store.ensure_collection("engram_event", 4)
    points = _points(12)
    store.upsert("engram_event", points)
    store.upsert("engram_event", points)
    assert store.count("engram_event") == 12
    changed = VectorPoint(points[3].id, points[3].vector, {"user_id": "u9", "layer": "USER"})
    store.upsert("engram_event", [changed])
    stored = {p.id: p for p in store.scroll_all("engram_event", page=5)}
    assert len(stored) == 12
    assert stored[points[3].id].payload == {"user_id": "u9", "layer": "USER"}


def test_set_payload_touches_only_stored_ids_and_delete_tolerates_missing(store: VectorStore) -> None:
    store.ensure_collection("engram_concept", 4)
    points = _points(4)
    store.upsert("engram_concept", points)
    missing = stable_id("missing")
    assert store.set_payload("engram_concept", [points[1].id, missing], {"dormant": 1}) == [points[1].id]
    assert store.set_payload("engram_other", [points[1].id], {"dormant": 1}) == []
    store.delete("engram_concept", [points[2].id, missing])
    store.delete("engram_absent", [missing])
    stored = {p.id: p.payload for p in store.scroll_all("engram_concept")}
    assert set(stored) == {points[0].id, points[1].id, points[3].id}
    assert stored[points[1].id]["dormant"] == 1


def test_delete_where_removes_every_match_dormant_included_in_one_call(store: VectorStore) -> None:
    store.ensure_collection("engram_event", 4)
    points = _points(30)
    store.upsert("engram_event", points)
    subject = PointFilter.subject("u0")
    assert store.count("engram_event", subject) == 10  # u0's point 0 is dormant: counted too
    store.delete_where("engram_event", subject)
    store.delete_where("engram_event", subject)  # again: nothing left to match, no error
    store.delete_where("engram_absent", subject)
    kept = {p.id: p.payload for p in store.scroll_all("engram_event")}
    assert kept == {p.id: dict(p.payload) for p in points if p.payload["user_id"] != "u0"}


@pytest.mark.parametrize(
    "where", [PointFilter(), PointFilter(not_equals=(("user_id", "u0"),))], ids=["no-condition", "only-not-equals"]
)
def test_delete_where_refuses_a_filter_that_names_nothing(store: VectorStore, where: PointFilter) -> None:
    store.ensure_collection("engram_event", 4)
    store.upsert("engram_event", _points(6))
    with pytest.raises(UnboundedDeleteError):
        store.delete_where("engram_event", where)
    assert store.count("engram_event") == 6


def test_missing_collection_reads_as_empty(store: VectorStore) -> None:
    assert store.search("engram_nothing", [1.0, 0.0], 5) == []
    assert store.count("engram_nothing") == 0
    assert list(store.scroll_all("engram_nothing")) == []


def test_dimension_and_name_are_checked(store: VectorStore) -> None:
    store.ensure_collection("engram_event", 4)
    with pytest.raises(VectorDimensionError):
        store.ensure_collection("engram_event", 8)
    with pytest.raises(VectorDimensionError):
        store.upsert("engram_event", [VectorPoint(stable_id("x"), [1.0, 0.0], {})])
    for bad in ("../escape", "Engram", "a/b", ""):
        with pytest.raises(InvalidCollectionNameError):
            store.ensure_collection(bad, 4)


def test_edge_engine_locks_its_folder_and_indexes_tenant_layer_and_instance(qdrant_folder: Path) -> None:
    first = EdgeVectorStore(qdrant_folder)
    first.ensure_collection("engram_event", 4)
    assert first.indexed_fields("engram_event") == ["instance", "layer", "user_id"]
    second = EdgeVectorStore(qdrant_folder)
    try:
        with pytest.raises(VectorStoreLockedError):
            second.open()
    finally:
        second.close()
        first.close()
    reopened = EdgeVectorStore(qdrant_folder)
    try:
        reopened.open()
        assert reopened.collections() == ["engram_event"]
    finally:
        reopened.close()


def _unexpected(status: int, headers: dict[str, str]) -> UnexpectedResponse:
    return UnexpectedResponse(status, "x", b"", httpx.Headers(headers))


def test_client_errors_map_to_sink_retry_errors() -> None:
    with pytest.raises(SinkBackpressureError) as pushed:
        _raise_sink_error(_unexpected(429, {"Retry-After": "2"}))
    assert pushed.value.retry_after == 2.0
    with pytest.raises(SinkBackpressureError) as default:
        _raise_sink_error(_unexpected(503, {}))
    assert default.value.retry_after == 1.0
    with pytest.raises(SinkTransientError):
        _raise_sink_error(_unexpected(502, {}))
    with pytest.raises(SinkTransientError):
        _raise_sink_error(httpx.ConnectError("refused"))
    with pytest.raises(UnexpectedResponse):
        _raise_sink_error(_unexpected(400, {}))
