"""`VectorStore` over qdrant-edge-py, Qdrant's in-process engine (the embedded default).

One ``EdgeShard`` per collection, in ``<root>/<collection>/``. Each shard takes a single-process
lock on its folder (its write-ahead log), so a second process, or a second store in the same
process, opening the same root gets `VectorStoreLockedError`. `open` loads every existing
collection under the root, so a locked root fails at startup and not at the first write.

Payload indexes: ``user_id`` as a keyword index with ``is_tenant=True`` and ``layer`` as a keyword
index are created with the collection, as on a Qdrant server.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from engram.sinks.qdrant.store import (
    PointFilter,
    SearchHit,
    StoredPoint,
    VectorPoint,
    VectorStoreLockedError,
    check_collection_name,
    check_delete_filter,
    check_dimension,
    check_points,
    dense_vector,
)

try:
    import qdrant_edge as qe
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "EdgeVectorStore needs qdrant-edge-py: pip install 'qdrant-edge-py>=0.9,<0.10'"
    raise ImportError(_msg) from exc

_CONFIG_FILE: Final = "edge_config.json"


@dataclass(frozen=True, slots=True)
class EdgeStoreConfig:
    """``max_search_threads`` None lets the engine size its pool from the CPU count."""

    max_search_threads: int | None = None
    tenant_field: str = "user_id"
    keyword_fields: tuple[str, ...] = ("layer", "instance")


def edge_filter(where: PointFilter | None) -> qe.Filter | None:
    return None if where is None else _edge_conditions(where)


def _edge_conditions(where: PointFilter) -> qe.Filter:
    must: list[qe.FieldCondition] = [qe.FieldCondition(key, match=qe.MatchValue(value)) for key, value in where.equals]
    must += [qe.FieldCondition(key, match=qe.MatchAny(list(values))) for key, values in where.any_of]
    must += [qe.FieldCondition(key, range=qe.RangeFloat(gt=above, lt=below)) for key, above, below in where.between]
    must_not = [qe.FieldCondition(key, match=qe.MatchValue(value)) for key, value in where.not_equals]
    return qe.Filter(must=list(must) or None, must_not=list(must_not) or None)


def _as_list(vector: Sequence[float]) -> list[float]:
    return vector if isinstance(vector, list) else list(vector)  # the sink's points hold lists already


def _as_dict(payload: Mapping[str, object]) -> dict[str, object]:
    return payload if isinstance(payload, dict) else dict(payload)


class EdgeVectorStore:
    """A folder of in-process Qdrant shards. Thread-safe for the sink's use (one lock)."""

    def __init__(self, root: Path, config: EdgeStoreConfig | None = None) -> None:
        self._root = root
        self._config = config or EdgeStoreConfig()
        self._shards: dict[str, qe.EdgeShard] = {}
        self._dims: dict[str, int] = {}
        self._lock = threading.Lock()
        self._opened = False

    @property
    def root(self) -> Path:
        return self._root

    def open(self) -> None:
        with self._lock:
            if self._opened:
                return
            self._root.mkdir(parents=True, exist_ok=True)
            for folder in sorted(self._root.iterdir()):
                if (folder / _CONFIG_FILE).exists():
                    self._load(check_collection_name(folder.name))
            self._opened = True

    def _load(self, name: str) -> qe.EdgeShard:
        folder = self._root / name
        try:
            shard = qe.EdgeShard.load(str(folder))
        except Exception as exc:  # the engine raises bare Exception
            if "WouldBlock" in str(exc):
                msg = f"the Qdrant folder {folder} is in use by another engine (single-process lock)"
                raise VectorStoreLockedError(msg) from exc
            raise
        config = json.loads((folder / _CONFIG_FILE).read_text(encoding="utf-8"))
        self._dims[name] = int(config["vectors"][""]["size"])
        self._shards[name] = shard
        return shard

    def ensure_collection(self, name: str, dim: int) -> None:
        check_collection_name(name)
        self.open()
        with self._lock:
            if name not in self._shards:
                if (self._root / name / _CONFIG_FILE).exists():
                    self._load(name)
                else:
                    self._create(name, dim)
            check_dimension(name, self._dims[name], dim)

    def _create(self, name: str, dim: int) -> None:
        vectors = qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)
        config = qe.EdgeConfig(vectors=vectors, max_search_threads=self._config.max_search_threads)
        shard = qe.EdgeShard.create(str(self._root / name), config)
        tenant = qe.KeywordIndexParams(is_tenant=True)
        shard.update(qe.UpdateOperation.create_field_index(self._config.tenant_field, tenant))
        for field in self._config.keyword_fields:
            shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        self._shards[name] = shard
        self._dims[name] = dim

    def collections(self) -> list[str]:
        self.open()
        return sorted(self._shards)

    def _shard(self, collection: str) -> qe.EdgeShard | None:
        self.open()
        return self._shards.get(collection)

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        shard = self._shard(collection)
        check_points(collection, None if shard is None else self._dims[collection], points)
        batch = [qe.Point(p.id, _as_list(p.vector), _as_dict(p.payload)) for p in points]
        if shard is not None and batch:
            shard.update(qe.UpdateOperation.upsert_points(batch))

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        shard = self._shard(collection)
        if shard is not None and ids:
            shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def delete_where(self, collection: str, where: PointFilter) -> None:
        """One ``delete_points_by_filter`` operation; it goes through the write-ahead log like any write."""
        check_delete_filter(where)
        shard = self._shard(collection)
        if shard is not None:
            shard.update(qe.UpdateOperation.delete_points_by_filter(_edge_conditions(where)))

    def set_payload(self, collection: str, ids: Sequence[str], payload: Mapping[str, object]) -> list[str]:
        shard = self._shard(collection)
        if shard is None or not ids:
            return []
        # The engine rejects the whole operation if one id is missing: keep those that exist.
        present = sorted(str(r.id) for r in shard.retrieve(list(ids), False, False))
        if present:
            shard.update(qe.UpdateOperation.set_payload(list(present), dict(payload)))
        return present

    def search(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        filter: PointFilter | None = None,
    ) -> list[SearchHit]:
        shard = self._shard(collection)
        if shard is None:
            return []
        request = qe.SearchRequest(
            query=qe.Query.Nearest(list(vector)), limit=limit, filter=edge_filter(filter), with_payload=True
        )
        return [SearchHit(str(h.id), float(h.score), dict(h.payload or {})) for h in shard.search(request)]

    def scroll_all(self, collection: str, page: int = 256) -> Iterator[StoredPoint]:
        shard = self._shard(collection)
        if shard is None:
            return
        offset: str | None = None
        while True:
            request = qe.ScrollRequest(offset=offset, limit=page, with_payload=True, with_vector=True)
            records, next_offset = shard.scroll(request)
            for r in records:
                yield StoredPoint(str(r.id), dense_vector(r.vector, collection), dict(r.payload or {}))
            if next_offset is None:
                return
            offset = str(next_offset)

    def count(self, collection: str, filter: PointFilter | None = None) -> int:
        shard = self._shard(collection)
        if shard is None:
            return 0
        return int(shard.count(qe.CountRequest(exact=True, filter=edge_filter(filter))))

    def indexed_fields(self, collection: str) -> list[str]:
        """Payload fields with an index in ``collection`` (empty if it does not exist)."""
        shard = self._shard(collection)
        return [] if shard is None else sorted(shard.info().payload_schema)

    def flush(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()

    def close(self) -> None:
        with self._lock:
            for shard in self._shards.values():
                shard.flush()
                shard.close()
            self._shards.clear()
            self._dims.clear()
            self._opened = False
