"""`VectorStore` over qdrant-client: a Qdrant server in production, local mode in tests.

    ClientVectorStore(QdrantServerConfig(url="http://qdrant:6333"))      # production
    ClientVectorStore(QdrantServerConfig(path="/tmp/q"))                 # local mode, on disk
    ClientVectorStore(QdrantServerConfig())                              # local mode, in memory

What differs from `EdgeVectorStore`:
- Payload indexes (``user_id`` with ``is_tenant=True``, ``layer`` as keyword) take effect on a
  server only; local mode ignores them (and warns, which this adapter silences for local mode).
- Errors: HTTP 429/503 become `SinkBackpressureError` (``Retry-After`` honoured), other 5xx and
  transport failures `SinkTransientError`; the sink's base class retries both.
- Writes use ``wait=True``, so `flush` has nothing left to do.
- Local mode is slow past a few thousand points (ARCHITECTURE.md, "Servers"); use it for tests of
  these calls only.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, NoReturn, ParamSpec, TypeVar

import httpx

from engram.sinks.base import SinkBackpressureError, SinkTransientError
from engram.sinks.qdrant.store import (
    PointFilter,
    SearchHit,
    StoredPoint,
    VectorPoint,
    VectorStoreError,
    check_collection_name,
    check_delete_filter,
    check_dimension,
    check_points,
    dense_vector,
)

try:
    from qdrant_client import QdrantClient
    from qdrant_client import models as qm
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "ClientVectorStore needs qdrant-client: pip install 'qdrant-client>=1.20,<2'"
    raise ImportError(_msg) from exc

P = ParamSpec("P")
R = TypeVar("R")

_PUSHBACK_STATUS: Final = frozenset({429, 503})
_DEFAULT_RETRY_AFTER_S: Final = 1.0


@dataclass(frozen=True, slots=True)
class QdrantServerConfig:
    """Where the server is. ``url`` for a server; else ``path`` (or neither: in memory) for local mode."""

    url: str | None = None
    path: str | None = None
    api_key: str | None = None
    timeout_s: int = 10
    tenant_field: str = "user_id"
    keyword_fields: tuple[str, ...] = ("layer", "instance")

    @property
    def local(self) -> bool:
        return self.url is None


def _client_filter(where: PointFilter | None) -> qm.Filter | None:
    return None if where is None else _client_conditions(where)


def _client_conditions(where: PointFilter) -> qm.Filter:
    must: list[qm.Condition] = [
        qm.FieldCondition(key=key, match=qm.MatchValue(value=value)) for key, value in where.equals
    ]
    must += [qm.FieldCondition(key=key, match=qm.MatchAny(any=list(values))) for key, values in where.any_of]
    must += [qm.FieldCondition(key=key, range=qm.Range(gt=above, lt=below)) for key, above, below in where.between]
    must_not: list[qm.Condition] = [
        qm.FieldCondition(key=key, match=qm.MatchValue(value=value)) for key, value in where.not_equals
    ]
    return qm.Filter(must=must or None, must_not=must_not or None)


def _raise_sink_error(exc: Exception) -> NoReturn:
    """Translate a client failure into the sink contract's retryable errors, else re-raise."""
    if isinstance(exc, UnexpectedResponse) and exc.status_code is not None:
        if exc.status_code in _PUSHBACK_STATUS:
            header = exc.headers.get("retry-after") if exc.headers is not None else None
            retry_after = float(header) if header and header.replace(".", "", 1).isdigit() else _DEFAULT_RETRY_AFTER_S
            raise SinkBackpressureError(retry_after, f"qdrant answered {exc.status_code}") from exc
        if exc.status_code >= 500:
            msg = f"qdrant answered {exc.status_code}: {exc.reason_phrase}"
            raise SinkTransientError(msg) from exc
    if isinstance(exc, ResponseHandlingException | httpx.TransportError):
        msg = f"qdrant unreachable: {exc}"
        raise SinkTransientError(msg) from exc
    raise exc


class ClientVectorStore:
    """One `QdrantClient`, created in `open`. Collection names map one to one."""

    def __init__(self, config: QdrantServerConfig | None = None) -> None:
        self._config = config or QdrantServerConfig()
        self._client: QdrantClient | None = None
        self._dims: dict[str, int] = {}

    def open(self) -> None:
        if self._client is not None:
            return
        c = self._config
        if c.url is not None:
            client = QdrantClient(url=c.url, api_key=c.api_key, timeout=c.timeout_s)
        else:
            client = QdrantClient(path=c.path) if c.path is not None else QdrantClient(location=":memory:")
        try:
            client.get_collections()
        except Exception as exc:
            client.close()
            _raise_sink_error(exc)
        self._client = client

    @property
    def client(self) -> QdrantClient:
        self.open()
        if self._client is None:  # pragma: no cover - open either sets it or raises
            msg = "qdrant client not open"
            raise VectorStoreError(msg)
        return self._client

    def _call(self, fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
        try:
            return fn(*args, **kwargs)
        except (UnexpectedResponse, ResponseHandlingException, httpx.TransportError) as exc:
            _raise_sink_error(exc)

    def _dim(self, name: str) -> int | None:
        if name in self._dims:
            return self._dims[name]
        if not self._call(self.client.collection_exists, name):
            return None
        vectors = self._call(self.client.get_collection, name).config.params.vectors
        if not isinstance(vectors, qm.VectorParams):
            msg = f"collection {name} uses named vectors; Engram configures one unnamed vector"
            raise VectorStoreError(msg)
        self._dims[name] = int(vectors.size)
        return self._dims[name]

    def ensure_collection(self, name: str, dim: int) -> None:
        check_collection_name(name)
        existing = self._dim(name)
        if existing is None:
            params = qm.VectorParams(size=dim, distance=qm.Distance.COSINE)
            self._call(self.client.create_collection, name, vectors_config=params)
            self._create_indexes(name)
            self._dims[name] = existing = dim
        check_dimension(name, existing, dim)

    def _create_indexes(self, name: str) -> None:
        tenant = qm.KeywordIndexParams(type=qm.KeywordIndexType.KEYWORD, is_tenant=True)
        with warnings.catch_warnings():
            if self._config.local:  # local mode ignores payload indexes and says so
                warnings.simplefilter("ignore", UserWarning)
            self._call(self.client.create_payload_index, name, self._config.tenant_field, tenant)
            for field in self._config.keyword_fields:
                self._call(self.client.create_payload_index, name, field, qm.PayloadSchemaType.KEYWORD)

    def collections(self) -> list[str]:
        answer = self._call(self.client.get_collections)
        return sorted(c.name for c in answer.collections)

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        check_points(collection, self._dim(collection), points)
        structs = [qm.PointStruct(id=p.id, vector=list(p.vector), payload=dict(p.payload)) for p in points]
        if structs:
            self._call(self.client.upsert, collection, structs, wait=True)

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        if ids and self._dim(collection) is not None:
            selector = qm.PointIdsList(points=list[qm.ExtendedPointId](ids))
            self._call(self.client.delete, collection, points_selector=selector, wait=True)

    def delete_where(self, collection: str, where: PointFilter) -> None:
        """One ``delete`` with a `FilterSelector` (the server deletes what matches, no id list)."""
        check_delete_filter(where)
        if self._dim(collection) is not None:
            selector = qm.FilterSelector(filter=_client_conditions(where))
            self._call(self.client.delete, collection, points_selector=selector, wait=True)

    def set_payload(self, collection: str, ids: Sequence[str], payload: Mapping[str, object]) -> list[str]:
        if not ids or self._dim(collection) is None:
            return []
        records = self._call(self.client.retrieve, collection, list(ids), with_payload=False, with_vectors=False)
        present = sorted(str(r.id) for r in records)
        if present:
            selector = qm.PointIdsList(points=list[qm.ExtendedPointId](present))
            self._call(self.client.set_payload, collection, dict(payload), points=selector, wait=True)
        return present

    def search(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        filter: PointFilter | None = None,
    ) -> list[SearchHit]:
        if self._dim(collection) is None:
            return []
        answer = self._call(
            self.client.query_points,
            collection,
            query=list(vector),
            limit=limit,
            query_filter=_client_filter(filter),
            with_payload=True,
        )
        return [SearchHit(str(p.id), float(p.score), dict(p.payload or {})) for p in answer.points]

    def scroll_all(self, collection: str, page: int = 256) -> Iterator[StoredPoint]:
        if self._dim(collection) is None:
            return
        offset: Any = None
        while True:
            records, offset = self._call(
                self.client.scroll, collection, limit=page, offset=offset, with_payload=True, with_vectors=True
            )
            for r in records:
                yield StoredPoint(str(r.id), dense_vector(r.vector, collection), dict(r.payload or {}))
            if offset is None:
                return

    def count(self, collection: str, filter: PointFilter | None = None) -> int:
        if self._dim(collection) is None:
            return 0
        answer = self._call(self.client.count, collection, count_filter=_client_filter(filter), exact=True)
        return int(answer.count)

    def flush(self) -> None:
        """Every write already waited for the server's acknowledgement."""

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None
        self._dims.clear()
