"""A view's dormant nodes in a store: the points `MemoryView` writes there, and what it reads back.

Issue 50: a worker must not hold every node it ever saw. A `MemoryView` given a `NodeStore` lets
its dormant nodes leave RAM: at the end of the ``apply`` that made a node dormant, it writes the
node to the store as a `NodePoint`:
- ``matched``: the unit vector a search matches the node by (a turn with its neighbours:
  `rows.RowBlock.matched_vector`), computed while the view still holds the neighbours;
- ``vector``: the node's own vector, which the view takes back when the node returns to RAM;
- ``terms``: its BM25 weights as a sparse vector (`sparse.SparseBM25`);
- the payload the ReBAC filters read (tenant, layer, instance, kind, dormancy), when the node
  happened (``span_start``, ``span_end``: a question naming a date searches by it) and the node's
  record as one JSON string (`node_payload`: a store converts each payload field on its own, so
  a nested record cost three times as much to write, 58 against 21 µs a point here).
Then its record and vector row leave the view, a stub of who may see it stays (`NodeStub`), and a
``NodeReawakened`` reads it back (`StoredNode`), its copy in the store flagged awake
(`NodeStore.hold`). The store answers the searches of the archive: the compiler's search on an SLB
miss (`archive.WholeMemory`) takes the view's live rows and the store's dormant points together.
A live node that falls out of its block's hot set (`storage.ViewConfig.hot_turns`) leaves RAM the
same way, its point flagged awake: the view's searches of live memory take it from the store.
A node's edges stay in the view.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer, node_instance
from engram.processors.retrieval.dated import Window, span_of
from engram.processors.retrieval.rows import Scope
from engram.processors.retrieval.sparse import SparseVector
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.schemas.records import EventRef, Layer

Vector = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class NodePoint:
    """One node as a store holds it (see the module docstring); ``vector`` None: not kept."""

    node_id: str
    matched: Vector | None
    terms: SparseVector
    payload: Mapping[str, object]
    vector: Vector | None = None


@dataclass(frozen=True, slots=True)
class StoredNode:
    """A node read back: its record, its own vector (None when the store has none) and dormancy."""

    record: NodeRecord
    vector: Vector | None
    dormant: bool
    links: tuple[Neighbour, ...] = ()


@dataclass(frozen=True, slots=True)
class NodeStub:
    """What the view keeps of a node that left RAM: enough to decide who may see it and whether an
    erasure takes it (`rebac.is_visible`, `trust.erasure.erased_by`)."""

    kind: str
    layer: Layer
    user_id: str | None
    instance: str | None
    terms: tuple[str, ...] = ()  # its distinct index terms and their frequencies: the archive's
    frequencies: tuple[int, ...] = ()  # BM25 statistics count it (`bm25.ArchiveStatistics`)

    @property
    def block(self) -> tuple[str, Layer]:
        """The view's block it left (`storage.block_key` of its record): its instance and layer."""
        return node_instance(self.layer, self.user_id, self.instance), self.layer

    @classmethod
    def of(cls, record: NodeRecord, terms: tuple[str, ...] = (), frequencies: tuple[int, ...] = ()) -> NodeStub:
        return cls(record.kind, record.layer, record.user_id, record.instance, terms, frequencies)


class NodeStore(Protocol):
    """Where a view's nodes live beyond RAM (`sinks.qdrant.hybrid_index.HybridIndex`)."""

    def write(self, points: Sequence[NodePoint]) -> None: ...

    def flag(self, node_ids: Sequence[str], *, dormant: bool) -> None: ...

    def hold(self, node_ids: Sequence[str]) -> None:
        """These nodes are back in the view's RAM: their copies stay (a restart from an older
        snapshot reads them back again), but no search of the store returns them."""

    def remove(self, node_ids: Sequence[str]) -> None: ...

    def vector_list(
        self, vector: Vector, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None,
        scope: Scope, window: Window | None = None,
    ) -> list[Candidate]: ...  # fmt: skip

    def term_list(
        self, query: str, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None,
        scope: Scope, weights: Mapping[str, float] | None = None, window: Window | None = None,
    ) -> list[Candidate]: ...  # fmt: skip

    def stored_nodes(self, node_ids: Sequence[str]) -> dict[str, StoredNode]: ...


SPAN_START, SPAN_END = "span_start", "span_end"  # when the node happened (`dated.span_of`), indexed

# A point's ``dormant`` payload: awake (searched as live), dormant (the archive), or held in a
# view's RAM (`NodeStore.hold`: searched by no scope).
AWAKE, DORMANT, HELD = 0, 1, 2


def node_payload(record: NodeRecord, dormant: bool, links: Sequence[Neighbour] | None = None) -> dict[str, object]:
    """What the ReBAC filters read (tenant, layer, instance, kind, dormancy) and what a read
    rebuilds the node from: its record (and, given ``links``, its edges)."""
    held = {
        "session_id": record.session_id, "text": record.text, "tokens": record.tokens,
        "event_time_ms": record.event_time_ms, "properties": record.properties,
        "sources": record.provenance, "instance": record.instance,
    }  # fmt: skip
    payload: dict[str, object] = {
        "user_id": record.user_id,
        "layer": record.layer,
        "instance": node_instance(record.layer, record.user_id, record.instance),
        "kind": record.kind,
        "dormant": DORMANT if dormant else AWAKE,
        "record": json.dumps(held, separators=(",", ":")),
    }
    payload[SPAN_START], payload[SPAN_END] = span_of(record)
    if links is not None:
        payload["links"] = json.dumps([[n.node_id, n.edge_type, n.weight, n.outgoing] for n in links])
    return payload


def stored_node(node_id: str, payload: Mapping[str, Any], vector: Vector | None = None) -> StoredNode:
    """The node a point's payload holds (`node_payload`)."""
    held = json.loads(payload["record"])
    record = NodeRecord(
        node_id=node_id, kind=str(payload["kind"]), layer=payload["layer"], user_id=payload["user_id"],
        session_id=held["session_id"], text=held["text"], tokens=int(held["tokens"]),
        event_time_ms=int(held["event_time_ms"]), properties=dict(held["properties"]),
        provenance=tuple(
            EventRef(topic=str(r["topic"]), partition=int(r["partition"]), offset=int(r["offset"]))
            for r in held["sources"]
        ),
        instance=held["instance"],
    )  # fmt: skip
    links = tuple(Neighbour(str(n), str(t), float(w), bool(o)) for n, t, w, o in json.loads(payload.get("links", "[]")))
    return StoredNode(record, vector, payload.get("dormant") == DORMANT, links)
