"""The slim vector-store protocol the Qdrant sink and the retrieval side depend on.

Two adapters implement it: `sinks.qdrant.edge.EdgeVectorStore` (qdrant-edge-py, in process, the
embedded default) and `sinks.qdrant.client.ClientVectorStore` (qdrant-client, production). Point
ids are uuid strings; vectors are compared by cosine similarity, so both engines store them
L2-normalized. A collection that does not exist reads as empty (search ``[]``, count 0).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, NamedTuple, Protocol, TypeAlias, runtime_checkable

# Match on strings and ints only: qdrant-edge-py 0.9 turns a bool in MatchValue into an int, so a
# bool payload never matches there. Flags are stored as 0/1 ints for that reason.
Scalar: TypeAlias = str | int
Payload: TypeAlias = dict[str, object]

COLLECTION_NAME: Final = re.compile(r"^[a-z][a-z0-9_]{0,62}$")


class VectorStoreError(Exception):
    """Base class of vector-store failures that retrying will not fix."""


class InvalidCollectionNameError(VectorStoreError):
    """A collection name outside ``^[a-z][a-z0-9_]{0,62}$`` (it becomes a folder name)."""


class VectorDimensionError(VectorStoreError):
    """A vector whose length differs from its collection's dimension."""


class VectorStoreLockedError(VectorStoreError):
    """Another process holds the engine's folder (each engine locks its folder)."""


class UnboundedDeleteError(VectorStoreError):
    """A delete filter without an ``equals`` or ``any_of`` condition: it would match (nearly)
    every point of the collection, which no caller means."""


def check_collection_name(name: str) -> str:
    if not COLLECTION_NAME.match(name):
        msg = f"invalid collection name {name!r}: expected {COLLECTION_NAME.pattern}"
        raise InvalidCollectionNameError(msg)
    return name


def check_dimension(collection: str, existing: int, dim: int) -> None:
    """`ensure_collection`'s check: an existing collection keeps its dimension."""
    if existing != dim:
        msg = f"collection {collection} has dimension {existing}, not {dim}"
        raise VectorDimensionError(msg)


def check_points(collection: str, dim: int | None, points: Sequence[VectorPoint]) -> None:
    """`upsert`'s check, before anything is written: the collection exists (``dim`` is its
    dimension, None if it does not exist) and every point has ``dim`` dimensions."""
    if dim is None:
        msg = f"collection {collection} does not exist; call ensure_collection first"
        raise VectorStoreError(msg)
    for p in points:
        if len(p.vector) != dim:
            msg = f"point {p.id} has {len(p.vector)} dimensions; {collection} has {dim}"
            raise VectorDimensionError(msg)


def check_delete_filter(where: PointFilter) -> PointFilter:
    """`delete_where`'s check: the filter names what it deletes (an ``equals`` or ``any_of``)."""
    if not (where.equals or where.any_of):
        msg = f"refusing to delete by {where!r}: it has no equals or any_of condition"
        raise UnboundedDeleteError(msg)
    return where


def dense_vector(vector: object, collection: str) -> list[float]:
    """The one unnamed dense vector Engram configures, as read back from an engine."""
    if isinstance(vector, list) and all(isinstance(x, float | int) for x in vector):
        return [float(x) for x in vector]
    msg = f"unexpected vector shape {type(vector).__name__} in {collection}"
    raise VectorStoreError(msg)


@dataclass(frozen=True, slots=True)
class VectorPoint:
    """One point to write. ``vector`` has the collection's dimension; ``payload`` is JSON-able."""

    id: str
    vector: Sequence[float]
    payload: Mapping[str, object]


class StoredPoint(NamedTuple):
    """A point as read back (vector as stored, i.e. normalized for cosine)."""

    id: str
    vector: list[float]
    payload: Payload


class SearchHit(NamedTuple):
    """``(id, score, payload)``; score is cosine similarity, higher is closer."""

    id: str
    score: float
    payload: Payload


@dataclass(frozen=True, slots=True)
class PointFilter:
    """Engine-neutral payload filter: all ``equals`` match, each ``any_of`` field takes one of its
    values, no ``not_equals`` pair matches, and each ``between`` field (key, above, below) is
    strictly between its bounds (None: unbounded). Keys may be dotted paths (``properties.repo``).
    """

    equals: tuple[tuple[str, Scalar], ...] = ()
    any_of: tuple[tuple[str, tuple[str, ...]], ...] = ()
    not_equals: tuple[tuple[str, Scalar], ...] = ()
    between: tuple[tuple[str, float | None, float | None], ...] = ()

    @classmethod
    def tenant(
        cls,
        user_id: str,
        layers: Sequence[str] | None = None,
        *,
        include_dormant: bool = False,
    ) -> PointFilter:
        """The usual read filter: one user's points, in the authorized layers, awake ones only."""
        any_of = (("layer", tuple(layers)),) if layers is not None else ()
        not_equals: tuple[tuple[str, Scalar], ...] = () if include_dormant else (("dormant", 1),)
        return cls(equals=(("user_id", user_id),), any_of=any_of, not_equals=not_equals)

    @classmethod
    def subject(cls, user_id: str) -> PointFilter:
        """Every point of one user, in any layer, dormant or awake (what an erasure deletes)."""
        return cls(equals=(("user_id", user_id),))


@runtime_checkable
class VectorStore(Protocol):
    """What the sink and the retrieval side need from a vector engine."""

    def open(self) -> None:
        """Connect (or open the folder) and verify with a cheap call. Idempotent."""
        ...

    def ensure_collection(self, name: str, dim: int) -> None:
        """Create the collection (cosine, ``dim``) with its payload indexes if absent.

        Raises VectorDimensionError if it exists with another dimension.
        """
        ...

    def collections(self) -> list[str]:
        """Names of the existing collections, sorted."""
        ...

    def upsert(self, collection: str, points: Sequence[VectorPoint]) -> None:
        """Insert or fully replace points by id (payload included). The collection must exist."""
        ...

    def delete(self, collection: str, ids: Sequence[str]) -> None:
        """Delete points by id; missing ids and a missing collection are fine."""
        ...

    def delete_where(self, collection: str, where: PointFilter) -> None:
        """Delete every point matching ``where`` with one engine call (no per-id loop); a missing
        collection is fine. Raises `UnboundedDeleteError` for a filter that names nothing."""
        ...

    def set_payload(self, collection: str, ids: Sequence[str], payload: Mapping[str, object]) -> list[str]:
        """Merge ``payload`` into those of ``ids`` that exist; return the ids that were updated."""
        ...

    def search(
        self,
        collection: str,
        vector: Sequence[float],
        limit: int,
        filter: PointFilter | None = None,
    ) -> list[SearchHit]:
        """The ``limit`` nearest points by cosine similarity, best first."""
        ...

    def scroll_all(self, collection: str, page: int = 256) -> Iterator[StoredPoint]:
        """Every point of the collection with vector and payload, in pages of ``page``."""
        ...

    def count(self, collection: str, filter: PointFilter | None = None) -> int:
        """Exact number of points (matching ``filter``)."""
        ...

    def flush(self) -> None:
        """Make every write so far durable."""
        ...

    def close(self) -> None:
        """Flush, then release the folder lock or the connection. Idempotent."""
        ...
