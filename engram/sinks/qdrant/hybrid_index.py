"""System 1's two lists read from Qdrant: the first step of memory that lives in the store.

Today the compiler ranks from the worker's in-process `MemoryView` alone, and Qdrant only receives
writes (issue 50). For Qdrant to answer System 1 as the view does, one collection holds per node:
- ``context``: the dense vector the view matches the node by (`MemoryView.matched_vectors`: a turn
  with its neighbours), cosine;
- ``terms``: its BM25 term weights as a sparse vector with Qdrant's IDF modifier
  (`processors.retrieval.sparse`);
- the payload the ReBAC filters read (``user_id`` as the tenant, ``layer``, ``instance``,
  ``kind``, ``dormant``, each indexed), and the node's record and edges for a cold read.

`HybridIndex.lists` returns the ``vector`` and ``bm25`` candidate lists the hybrid search fuses
(`processors.retrieval.hybrid.rank_lists`), each searched inside the engine under
`search.visibility_filters`, so no unauthorized point is scored. `HybridIndex.cold_nodes` is the
cold tier of `processors.retrieval.tiered.TieredMemory`. ``engram bench locomo --qdrant-lists``
and ``--hot-set`` measure recall through them against the view's own.

Over qdrant-edge (the embedded engine), one shard in its own folder.
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Final

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer, node_instance
from engram.processors.retrieval.sparse import SparseBM25, SparseVector, query_vector
from engram.processors.retrieval.text import indexed_terms
from engram.processors.retrieval.tiered import ColdNode
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import LAYERS, EventRef, Layer
from engram.sinks.qdrant.edge import edge_filter
from engram.sinks.qdrant.search import visibility_filters
from engram.sinks.qdrant.store import PointFilter, check_dimension

try:
    import qdrant_edge as qe
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "HybridIndex needs qdrant-edge-py: pip install 'qdrant-edge-py>=0.9,<0.10'"
    raise ImportError(_msg) from exc

DENSE: Final = "context"
SPARSE: Final = "terms"


@dataclass(frozen=True, slots=True)
class HybridPoint:
    node_id: str
    dense: npt.NDArray[np.float32] | None
    terms: SparseVector
    payload: Mapping[str, object]


def points_from_view(
    view: MemoryView, node_ids: Sequence[str], sparse: SparseBM25 | None = None
) -> tuple[list[HybridPoint], SparseBM25]:
    """The points of these nodes as the view holds them (nodes it does not hold are left out), and
    the BM25 weighting used: ``sparse``, or one fitted to these nodes' mean length."""
    records = [(node_id, record) for node_id in node_ids if (record := view.node(node_id)) is not None]
    documents = [indexed_terms(record, view.config.indexed_properties) for _, record in records]
    sparse = sparse or SparseBM25.fitted(view.config.bm25, documents)
    matched = view.matched_vectors([node_id for node_id, _ in records])
    out: list[HybridPoint] = []
    for (node_id, record), dense, terms in zip(records, matched, documents, strict=True):
        links = view.links(node_id, LAYERS)  # every edge: a reader keeps the ends live when it reads
        payload = node_payload(record, links, view.is_dormant(node_id))
        out.append(HybridPoint(node_id, dense, sparse.document(terms), payload))
    return out, sparse


def node_payload(record: NodeRecord, links: Sequence[Neighbour], dormant: bool) -> dict[str, object]:
    """What the ReBAC filters read (tenant, layer, instance, kind, dormancy) and what a cold read
    rebuilds the node from: its record and its edges."""
    return {
        "user_id": record.user_id,
        "layer": record.layer,
        "instance": node_instance(record.layer, record.user_id, record.instance),
        "kind": record.kind,
        "dormant": int(dormant),
        "record": {
            "session_id": record.session_id, "text": record.text, "tokens": record.tokens,
            "event_time_ms": record.event_time_ms, "properties": dict(record.properties),
            "sources": [dict(ref) for ref in record.provenance], "instance": record.instance,
        },
        "links": [[n.node_id, n.edge_type, n.weight, n.outgoing] for n in links],
    }  # fmt: skip


def cold_node(node_id: str, payload: Mapping[str, Any]) -> ColdNode:
    """The node a point's payload holds (`node_payload`)."""
    held = payload["record"]
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
    links = tuple(Neighbour(str(n), str(t), float(w), bool(o)) for n, t, w, o in payload["links"])
    return ColdNode(record, links)


class HybridIndex:
    """One qdrant-edge shard of dense and sparse node vectors. Thread-safe (one lock)."""

    def __init__(self, root: Path, dim: int) -> None:
        config = qe.EdgeConfig(
            vectors={DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine)},
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        )
        root.mkdir(parents=True, exist_ok=True)
        self._dim = dim
        self._shard = qe.EdgeShard.create(str(root), config)
        self._shard.update(qe.UpdateOperation.create_field_index("user_id", qe.KeywordIndexParams(is_tenant=True)))
        for field in ("layer", "instance", "kind"):
            self._shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        # indexed, so the filters never read a point's payload (a cold node's record and links)
        self._shard.update(qe.UpdateOperation.create_field_index("dormant", qe.PayloadSchemaType.Integer))
        self._lock = threading.Lock()

    def upsert(self, points: Sequence[HybridPoint]) -> None:
        batch = []
        for point in points:
            vectors: dict[str, list[float] | qe.SparseVector | list[list[float]]] = {
                SPARSE: qe.SparseVector(list(point.terms.indices), list(point.terms.values))
            }
            if point.dense is not None:
                check_dimension(DENSE, self._dim, int(point.dense.shape[0]))
                vectors[DENSE] = point.dense.tolist()
            batch.append(qe.Point(point.node_id, vectors, dict(point.payload)))
        with self._lock:
            self._shard.update(qe.UpdateOperation.upsert_points(batch))

    def lists(
        self, query: str, vector: npt.NDArray[np.float32] | None, k: int, viewer: Viewer, layers: Collection[Layer],
        kinds: Collection[str] | None = None,
    ) -> dict[str, list[Candidate]]:  # fmt: skip
        """The ``k`` best visible live nodes by dense cosine (``vector``) and by BM25 (``bm25``),
        best first, ties by id; a list is left out when its query is empty."""
        filters = [_with_kinds(f, kinds) for f in visibility_filters(viewer, layers)]
        out: dict[str, list[Candidate]] = {}
        if vector is not None:
            dense = qe.Query.Nearest(np.asarray(vector, np.float32).tolist(), using=DENSE)
            out["vector"] = self._search(dense, k, filters, "vector")
        terms = query_vector(query)
        if terms.indices:
            sparse = qe.SparseVector(list(terms.indices), list(terms.values))
            out["bm25"] = self._search(qe.Query.Nearest(sparse, using=SPARSE), k, filters, "bm25")
        return out

    def cold_nodes(self, node_ids: Sequence[str]) -> dict[str, ColdNode]:
        """The live (not dormant) nodes among ``node_ids`` (`processors.retrieval.tiered.ColdSource`)."""
        with self._lock:
            found = self._shard.retrieve(list(node_ids), with_payload=True, with_vector=False)
        return {str(p.id): cold_node(str(p.id), p.payload) for p in found if p.payload and not p.payload.get("dormant")}

    def _search(self, query: qe.Query, k: int, filters: Sequence[PointFilter], source: str) -> list[Candidate]:
        hits: list[Candidate] = []
        with self._lock:
            for where in filters:
                request = qe.SearchRequest(query=query, limit=k, filter=edge_filter(where))
                hits.extend(Candidate(str(p.id), float(p.score), source) for p in self._shard.search(request))
        return sorted(hits, key=lambda c: (-c.score, c.node_id))[:k]

    def close(self) -> None:
        with self._lock:
            self._shard.close()


def _with_kinds(where: PointFilter, kinds: Collection[str] | None) -> PointFilter:
    return where if kinds is None else replace(where, any_of=(*where.any_of, ("kind", tuple(sorted(kinds)))))
