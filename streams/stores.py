"""Open the derived stores a worker writes, from its config: production adapters when a server is
configured (qdrant-client, the neo4j driver), the embedded ones otherwise (qdrant-edge, FalkorDB).
"""

from __future__ import annotations

from schemas.records import MemoryEvent
from sinks.base import BatchingSink
from sinks.qdrant.sink import QdrantSink
from streams.config import EngramConfig

NamedSink = tuple[str, BatchingSink[MemoryEvent]]


def vector_sink(config: EngramConfig) -> QdrantSink:
    if config.qdrant_url:
        from sinks.qdrant.client import ClientVectorStore, QdrantServerConfig

        return QdrantSink(ClientVectorStore(QdrantServerConfig(url=config.qdrant_url)))
    from sinks.qdrant.edge import EdgeVectorStore

    return QdrantSink(EdgeVectorStore(config.qdrant_path or config.data_dir / "qdrant"))


def open_stores(config: EngramConfig) -> list[NamedSink]:
    """Every configured store sink, set up (connected) and ready to apply batches."""
    sinks: list[NamedSink] = [("qdrant", vector_sink(config))]
    for _, sink in sinks:
        sink.setup()
    return sinks
