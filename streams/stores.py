"""Open the derived stores a worker writes, from its config: production adapters when a server is
configured (qdrant-client, the neo4j driver), the embedded ones otherwise (qdrant-edge, FalkorDB);
and the compile path's outside services (graph reads for System 2, the optional LLM router).
"""

from __future__ import annotations

from processors.router import LlmRouter, RouteClassifier, RuleRouter
from processors.router.llm import over_chat_api
from schemas.records import MemoryEvent
from sinks.base import BatchingSink
from sinks.graph.expansion import CypherExpander
from sinks.graph.sink import GraphSink
from sinks.qdrant.sink import QdrantSink
from streams.config import EngramConfig

NamedSink = tuple[str, BatchingSink[MemoryEvent]]


def vector_sink(config: EngramConfig) -> QdrantSink:
    if config.qdrant_url:
        from sinks.qdrant.client import ClientVectorStore, QdrantServerConfig

        return QdrantSink(ClientVectorStore(QdrantServerConfig(url=config.qdrant_url)))
    from sinks.qdrant.edge import EdgeVectorStore

    return QdrantSink(EdgeVectorStore(config.qdrant_path or config.data_dir / "qdrant"))


def graph_sink(config: EngramConfig) -> GraphSink | None:
    """Neo4j when ENGRAM_NEO4J_URI is set; else FalkorDB when its port is known; else no graph."""
    if config.neo4j_uri:
        from sinks.graph.neo4j_executor import Neo4jExecutor

        auth = (config.neo4j_user, config.neo4j_password) if config.neo4j_password else None
        return GraphSink(Neo4jExecutor.connect(config.neo4j_uri, auth=auth))
    if config.falkordb_host and config.falkordb_port:
        from sinks.graph.falkor import FalkorConfig, FalkorExecutor

        return GraphSink(
            FalkorExecutor(FalkorConfig(config.falkordb_host, config.falkordb_port, graph=config.graph_name))
        )
    return None


def graph_expander(config: EngramConfig, timeout_s: float = 0.5) -> CypherExpander | None:
    """System 2's Cypher reads for the compile path, on a connection of their own with a short
    timeout (a slow store makes the compiler expand in process instead). Connects on first use."""
    if config.neo4j_uri:
        from sinks.graph.neo4j_executor import Neo4jExecutor

        auth = (config.neo4j_user, config.neo4j_password) if config.neo4j_password else None
        reader = Neo4jExecutor.connect(config.neo4j_uri, auth=auth, create_index=False, connection_timeout=timeout_s)
        return CypherExpander(reader)
    if config.falkordb_host and config.falkordb_port:
        from sinks.graph.falkor import FalkorConfig, FalkorExecutor

        falkor = FalkorConfig(
            config.falkordb_host, config.falkordb_port, graph=config.graph_name, socket_timeout_s=timeout_s
        )
        return CypherExpander(FalkorExecutor(falkor))
    return None


def context_router(config: EngramConfig) -> RouteClassifier:
    """The offline rule router, or the LLM router (rules as its fallback) when a chat API is set."""
    if not config.router_llm_url:
        return RuleRouter()
    from sinks.llm_http import LLMHttpConfig, OpenAIChatTransport

    client = OpenAIChatTransport(
        LLMHttpConfig(config.router_llm_url, api_key=config.llm_api_key, timeout_s=config.router_llm_timeout_s)
    )
    return LlmRouter(over_chat_api(client, config.router_llm_model))


def open_stores(config: EngramConfig) -> list[NamedSink]:
    """Every configured store sink, set up (connected) and ready to apply batches."""
    sinks: list[NamedSink] = [("qdrant", vector_sink(config))]
    graph = graph_sink(config)
    if graph is not None:
        sinks.append(("graph", graph))
    for _, sink in sinks:
        sink.setup()
    return sinks
