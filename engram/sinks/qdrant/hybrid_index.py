"""System 1's lists read from Qdrant: memory that lives in the store (issue 50).

One collection holds per node:
- ``context``: the dense vector the view matches the node by (`MemoryView.matched_vectors`: a turn
  with its neighbours), cosine;
- ``node``: the node's own vector, on disk (read when the node comes back to RAM);
- ``terms``: its BM25 term weights as a sparse vector (`processors.retrieval.sparse`), scored with
  Qdrant's IDF modifier, or (`HybridIndex.for_view`) with the query's own term weights;
- the payload the ReBAC filters read (``user_id`` as the tenant, ``layer``, ``instance``,
  ``kind``, ``dormant``, each indexed), the node's id and its record (and edges) as JSON strings.

It is the worker's view's store, where dormant nodes leave RAM for (`processors.retrieval.stored`,
``ENGRAM_VIEW_STORE``).

`HybridIndex.lists` returns the ``vector`` and ``bm25`` candidate lists the hybrid search fuses
(`processors.retrieval.hybrid.rank_lists`), each searched inside the engine under
`search.visibility_filters`, so no unauthorized point is scored. `HybridIndex.cold_nodes` is the
cold tier of `processors.retrieval.tiered.TieredMemory`. ``engram bench locomo --qdrant-lists``
and ``--hot-set`` measure recall through them against the view's own.

Over qdrant-edge (the embedded engine), one shard in its own folder.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Collection, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Final

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer
from engram.processors.retrieval.dated import Window
from engram.processors.retrieval.rows import Scope
from engram.processors.retrieval.sparse import SparseBM25, query_vector, weighted
from engram.processors.retrieval.stored import (
    AWAKE,
    DORMANT,
    HELD,
    SPAN_END,
    SPAN_START,
    NodePoint,
    StoredNode,
    node_payload,
    stored_node,
)
from engram.processors.retrieval.text import indexed_terms
from engram.processors.retrieval.tiered import ColdNode
from engram.processors.retrieval.types import Candidate
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import LAYERS, Layer
from engram.sinks.qdrant.edge import edge_filter
from engram.sinks.qdrant.search import visibility_filters
from engram.sinks.qdrant.store import PointFilter, check_dimension

try:
    import qdrant_edge as qe
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "HybridIndex needs qdrant-edge-py: pip install 'qdrant-edge-py>=0.9,<0.10'"
    raise ImportError(_msg) from exc

DIM_FILE: Final = "dimension"  # beside the shard: the size of its dense vectors
NODE_ID: Final = "node_id"  # the node's own id: a point's id is a UUID (`point_id`)
DENSE: Final = "context"
OWN: Final = "node"
SPARSE: Final = "terms"


def points_from_view(
    view: MemoryView, node_ids: Sequence[str], sparse: SparseBM25 | None = None
) -> tuple[list[NodePoint], SparseBM25]:
    """The points of these nodes as the view holds them, with their edges (nodes it does not hold
    are left out), and the BM25 weighting used: ``sparse``, or one fitted to these nodes' mean
    length."""
    records = [(node_id, record) for node_id in node_ids if (record := view.node(node_id)) is not None]
    documents = [indexed_terms(record, view.config.indexed_properties) for _, record in records]
    sparse = sparse or SparseBM25.fitted(view.config.bm25, documents)
    matched = view.matched_vectors([node_id for node_id, _ in records])
    out: list[NodePoint] = []
    for (node_id, record), dense, terms in zip(records, matched, documents, strict=True):
        links = view.links(node_id, LAYERS)  # every edge: a reader keeps the ends live when it reads
        payload = node_payload(record, view.is_dormant(node_id), links)
        out.append(NodePoint(node_id, dense, sparse.document(terms), payload))
    return out, sparse


def point_id(node_id: str) -> str:
    """The point id of a node: its id when that is a UUID (Engram's ids are: `schemas.events.stable_id`),
    else a UUID derived from it (Qdrant keys points by UUID or integer)."""
    try:
        return str(uuid.UUID(node_id))
    except ValueError:
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"engram-node:{node_id}"))


class HybridIndex:
    """One qdrant-edge shard of dense and sparse node vectors: the view's `stored.NodeStore` and the
    cold tier of `tiered.TieredMemory`. Thread-safe (one lock)."""

    def __init__(self, root: Path, dim: int | None = None, *, idf_in_store: bool = True) -> None:
        """The shard in ``root``: reopened when an earlier run left one (a restart reads local
        state), else created with vectors of ``dim`` dimensions, or, without ``dim``, at the first
        write, sized by its vectors. ``idf_in_store``: the sparse vectors' score takes Qdrant's IDF
        over the collection; without it the query brings its own weights (`term_list`)."""
        root.mkdir(parents=True, exist_ok=True)
        self._root = root
        self._idf = idf_in_store
        self._lock = threading.Lock()
        self._shard: qe.EdgeShard | None = None
        self._dim = int((root / DIM_FILE).read_text()) if (root / DIM_FILE).is_file() else dim
        if self._dim is not None:
            self._open(self._dim)

    @classmethod
    def for_view(cls, root: Path, dim: int | None = None) -> HybridIndex:
        """A view's store (`processors.retrieval.stored`): its searches weight the query's terms by
        the view's own idf (live nodes and archive together), not the store's."""
        return cls(root, dim, idf_in_store=False)

    def _open(self, dim: int) -> qe.EdgeShard:
        config = qe.EdgeConfig(
            vectors={
                DENSE: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine),
                # read only when a node comes back to RAM: on disk, paged in on demand
                OWN: qe.EdgeVectorParams(size=dim, distance=qe.Distance.Cosine, memory=qe.Memory.Cold),
            },
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf if self._idf else None)},
        )
        folder = self._root / "shard"
        held = folder.is_dir() and any(folder.iterdir())
        shard = qe.EdgeShard.load(str(folder), config) if held else qe.EdgeShard.create(str(folder), config)
        shard.update(qe.UpdateOperation.create_field_index("user_id", qe.KeywordIndexParams(is_tenant=True)))
        for field in ("layer", "instance", "kind"):
            shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Keyword))
        # indexed, so the filters never read a point's payload (a cold node's record and links)
        shard.update(qe.UpdateOperation.create_field_index("dormant", qe.PayloadSchemaType.Integer))
        for field in (SPAN_START, SPAN_END):  # a question naming a date searches by them
            shard.update(qe.UpdateOperation.create_field_index(field, qe.PayloadSchemaType.Integer))
        (self._root / DIM_FILE).write_text(str(dim))
        self._dim, self._shard = dim, shard
        return shard

    def write(self, points: Sequence[NodePoint]) -> None:
        """Upsert ``points`` by node id (a point written again replaces the old one whole)."""
        batch = []
        dims = [int(v.shape[0]) for point in points for v in (point.matched, point.vector) if v is not None]
        if self._shard is None and not dims:
            return  # nothing with a vector yet to size the shard by: nothing to search by vector either
        size = dims[0] if self._dim is None else self._dim
        shard = self._shard or self._open(size)
        for point in points:
            vectors: dict[str, list[float] | qe.SparseVector | list[list[float]]] = {
                SPARSE: qe.SparseVector(list(point.terms.indices), list(point.terms.values))
            }
            for name, vector in ((DENSE, point.matched), (OWN, point.vector)):
                if vector is not None:
                    check_dimension(name, size, int(vector.shape[0]))
                    vectors[name] = vector.tolist()
            batch.append(qe.Point(point_id(point.node_id), vectors, {**point.payload, NODE_ID: point.node_id}))
        if batch:
            with self._lock:
                shard.update(qe.UpdateOperation.upsert_points(batch))

    def flag(self, node_ids: Sequence[str], *, dormant: bool) -> None:
        """Mark points dormant (or awake) without writing them again."""
        self._set_state(node_ids, DORMANT if dormant else AWAKE)

    def hold(self, node_ids: Sequence[str]) -> None:
        """These nodes are back in a view's RAM: kept, but no scope's search returns them."""
        self._set_state(node_ids, HELD)

    def _set_state(self, node_ids: Sequence[str], state: int) -> None:
        if node_ids and self._shard is not None:
            with self._lock:
                self._shard.update(qe.UpdateOperation.set_payload([point_id(n) for n in node_ids], {"dormant": state}))

    def remove(self, node_ids: Sequence[str]) -> None:
        if node_ids and self._shard is not None:
            with self._lock:
                self._shard.update(qe.UpdateOperation.delete_points([point_id(n) for n in node_ids]))

    def lists(
        self, query: str, vector: npt.NDArray[np.float32] | None, k: int, viewer: Viewer, layers: Collection[Layer],
        kinds: Collection[str] | None = None, scope: Scope = "live",
    ) -> dict[str, list[Candidate]]:  # fmt: skip
        """The ``k`` best visible nodes of ``scope`` by dense cosine (``vector``) and by BM25
        (``bm25``), best first, ties by id; a list is left out when its query is empty."""
        out: dict[str, list[Candidate]] = {}
        if vector is not None:
            out["vector"] = self.vector_list(vector, k, viewer, layers, kinds, scope)
        if query_vector(query).indices:
            out["bm25"] = self.term_list(query, k, viewer, layers, kinds, scope)
        return out

    def vector_list(
        self, vector: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer],
        kinds: Collection[str] | None = None, scope: Scope = "live", window: Window | None = None,
    ) -> list[Candidate]:  # fmt: skip
        """The ``k`` visible nodes of ``scope`` (of ``window``'s time) whose matched vector is nearest ``vector``."""
        dense = qe.Query.Nearest(np.asarray(vector, np.float32).tolist(), using=DENSE)
        return self._search(dense, k, _filters(viewer, layers, kinds, scope, window), "vector")

    def term_list(
        self, query: str, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None,
        scope: Scope = "live", weights: Mapping[str, float] | None = None, window: Window | None = None,
    ) -> list[Candidate]:  # fmt: skip
        """The ``k`` visible nodes of ``scope`` (of ``window``'s time) of best BM25 for ``query``
        (none for a query without index terms): weight 1 a term, or ``weights`` (a term's idf elsewhere)."""
        terms = query_vector(query) if weights is None else weighted(weights)
        if not terms.indices:
            return []
        sparse = qe.SparseVector(list(terms.indices), list(terms.values))
        where = _filters(viewer, layers, kinds, scope, window)
        return self._search(qe.Query.Nearest(sparse, using=SPARSE), k, where, "bm25")

    def stored_nodes(self, node_ids: Sequence[str], *, vectors: bool = True) -> dict[str, StoredNode]:
        """The nodes among ``node_ids`` the shard holds, live or dormant, with their own vectors
        (``vectors``) or without."""
        if not node_ids or self._shard is None:
            return {}
        with self._lock:
            found = self._shard.retrieve(
                [point_id(n) for n in node_ids], with_payload=True, with_vector=[OWN] if vectors else False
            )
        out: dict[str, StoredNode] = {}
        for point in found:
            if point.payload:
                own = point.vector.get(OWN) if isinstance(point.vector, dict) else None
                vector = None if own is None else np.asarray(own, dtype=np.float32)
                node_id = str(point.payload[NODE_ID])
                out[node_id] = stored_node(node_id, point.payload, vector)
        return out

    def cold_nodes(self, node_ids: Sequence[str]) -> dict[str, ColdNode]:
        """The live (not dormant) nodes among ``node_ids`` (`processors.retrieval.tiered.ColdSource`)."""
        found = self.stored_nodes(node_ids, vectors=False)
        return {n: ColdNode(node.record, node.links) for n, node in found.items() if not node.dormant}

    def __len__(self) -> int:
        if self._shard is None:
            return 0
        with self._lock:
            return int(self._shard.count(qe.CountRequest(exact=True)))

    def _search(self, query: qe.Query, k: int, filters: Sequence[PointFilter], source: str) -> list[Candidate]:
        hits: list[Candidate] = []
        if self._shard is None:
            return hits
        with self._lock:
            for where in filters:
                request = qe.SearchRequest(query=query, limit=k, filter=edge_filter(where), with_payload=[NODE_ID])
                found = self._shard.search(request)
                hits.extend(Candidate(str(p.payload[NODE_ID] if p.payload else p.id), p.score, source) for p in found)
        return sorted(hits, key=lambda c: (-c.score, c.node_id))[:k]

    def flush(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.flush()

    def close(self) -> None:
        with self._lock:
            if self._shard is not None:
                self._shard.close()
                self._shard = None


def _filters(
    viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None, scope: Scope,
    window: Window | None = None,
) -> list[PointFilter]:  # fmt: skip
    """`search.visibility_filters` narrowed to ``kinds``, to the nodes of ``scope`` (awake
    ("live"), dormant ("archived") or both ("all"); never a point held in a view's RAM), and to
    those whose time overlaps ``window``."""
    out: list[PointFilter] = []
    for where in visibility_filters(viewer, layers):
        if window is not None:
            where = replace(where, between=((SPAN_START, None, window[1]), (SPAN_END, window[0], None)))
        if kinds is not None:
            where = replace(where, any_of=(*where.any_of, ("kind", tuple(sorted(kinds)))))
        others = tuple(p for p in where.not_equals if p != ("dormant", DORMANT))
        if scope == "all":
            where = replace(where, not_equals=(*others, ("dormant", HELD)))
        else:
            state = DORMANT if scope == "archived" else AWAKE
            where = replace(where, equals=(*where.equals, ("dormant", state)), not_equals=others)
        out.append(where)
    return out
