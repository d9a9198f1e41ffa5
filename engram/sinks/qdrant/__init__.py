"""The Qdrant sink: node embeddings from ``engram.memory`` into a vector store.

- `store`: the slim `VectorStore` protocol, `VectorPoint`, `PointFilter`, `SearchHit`, errors.
- `edge`: `EdgeVectorStore` over qdrant-edge-py, in process (embedded default; folder lock).
- `client`: `ClientVectorStore` over qdrant-client (production server; local mode in tests).
- `plan`: a batch of MemoryEvents coalesced into writes per point id, split at each
  SubjectErased (pure).
- `sink`: `QdrantSink(BatchingSink[MemoryEvent])`.
- `hashing`: `vector_content_hash`, equal for stores with equal content.
- `hybrid_index`: `HybridIndex`, System 1's two lists (dense as the view matches a node, BM25 as
  a sparse vector with the IDF modifier) read from qdrant-edge under the ReBAC filters.

The adapters are imported from their modules (``from sinks.qdrant.edge import EdgeVectorStore``)
so that each engine's package is needed only where it is used.

Payload indexes: both adapters index ``user_id`` as a tenant (keyword, ``is_tenant=True``) and
``layer`` and ``instance`` as keywords when they create a collection. qdrant-edge applies them; qdrant-client
local mode accepts and ignores them (a server applies them).
"""

from engram.sinks.qdrant.hashing import vector_content_hash
from engram.sinks.qdrant.plan import (
    VectorBatchPlan,
    VectorErasure,
    VectorWrites,
    collection_for_kind,
    plan_batch,
    point_payload,
)
from engram.sinks.qdrant.sink import QdrantSink, QdrantSinkConfig, QdrantSinkStats
from engram.sinks.qdrant.store import (
    InvalidCollectionNameError,
    PointFilter,
    SearchHit,
    StoredPoint,
    UnboundedDeleteError,
    VectorDimensionError,
    VectorPoint,
    VectorStore,
    VectorStoreError,
    VectorStoreLockedError,
)

__all__ = [
    "InvalidCollectionNameError",
    "PointFilter",
    "QdrantSink",
    "QdrantSinkConfig",
    "QdrantSinkStats",
    "SearchHit",
    "StoredPoint",
    "UnboundedDeleteError",
    "VectorBatchPlan",
    "VectorDimensionError",
    "VectorErasure",
    "VectorPoint",
    "VectorStore",
    "VectorStoreError",
    "VectorStoreLockedError",
    "VectorWrites",
    "collection_for_kind",
    "plan_batch",
    "point_payload",
    "vector_content_hash",
]
