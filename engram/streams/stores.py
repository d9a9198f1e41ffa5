"""Open the derived stores a worker writes, from its config: production adapters when a server is
configured (qdrant-client, the neo4j driver), the embedded ones otherwise (qdrant-edge, FalkorDB);
and the compile path's outside services (graph reads for System 2, the optional LLM router, a
remote embedder). Each of those runs on the compile path's `BlockingCalls` (sinks/deadline.py),
waited for within the request's budget, never on the event loop.
"""

from __future__ import annotations

from engram.processors.embedding.base import Embedder
from engram.processors.facts.extractor import Extractor, PatternExtractor
from engram.processors.router import LlmRouter, RouteClassifier, RuleRouter
from engram.processors.router.llm import over_chat_api
from engram.schemas.records import MemoryEvent
from engram.sinks.base import BatchingSink
from engram.sinks.deadline import BlockingCalls
from engram.sinks.graph.expansion import CypherExpander, DeadlineExpander
from engram.sinks.graph.sink import GraphSink
from engram.sinks.qdrant.sink import QdrantSink
from engram.streams.config import EngramConfig

NamedSink = tuple[str, BatchingSink[MemoryEvent]]


def vector_sink(config: EngramConfig) -> QdrantSink:
    if config.qdrant_url:
        from engram.sinks.qdrant.client import ClientVectorStore, QdrantServerConfig

        return QdrantSink(ClientVectorStore(QdrantServerConfig(url=config.qdrant_url)))
    from engram.sinks.qdrant.edge import EdgeVectorStore

    return QdrantSink(EdgeVectorStore(config.qdrant_path or config.data_dir / "qdrant"))


def graph_sink(config: EngramConfig) -> GraphSink | None:
    """Neo4j when ENGRAM_NEO4J_URI is set; else FalkorDB when its port is known; else no graph."""
    if config.neo4j_uri:
        from engram.sinks.graph.neo4j_executor import Neo4jExecutor

        auth = (config.neo4j_user, config.neo4j_password) if config.neo4j_password else None
        return GraphSink(Neo4jExecutor.connect(config.neo4j_uri, auth=auth))
    if config.falkordb_host and config.falkordb_port:
        from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor

        return GraphSink(
            FalkorExecutor(FalkorConfig(config.falkordb_host, config.falkordb_port, graph=config.graph_name))
        )
    return None


def graph_expander(config: EngramConfig, calls: BlockingCalls, timeout_s: float = 0.5) -> DeadlineExpander | None:
    """System 2's Cypher reads for the compile path, on a connection of their own, run on ``calls``
    within the request's budget (a slow store makes the compiler expand in process instead). The
    socket timeout bounds how long an abandoned read holds its pool thread. Connects here, at worker
    start (`CypherExpander.warm_up`), not inside the first request's deadline."""
    if config.neo4j_uri:
        from engram.sinks.graph.neo4j_executor import Neo4jExecutor

        auth = (config.neo4j_user, config.neo4j_password) if config.neo4j_password else None
        reader = Neo4jExecutor.connect(config.neo4j_uri, auth=auth, create_index=False, connection_timeout=timeout_s)
        return _warmed(CypherExpander(reader), calls)
    if config.falkordb_host and config.falkordb_port:
        from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor

        falkor = FalkorConfig(
            config.falkordb_host, config.falkordb_port, graph=config.graph_name, socket_timeout_s=timeout_s
        )
        return _warmed(CypherExpander(FalkorExecutor(falkor)), calls)
    return None


def _warmed(expander: CypherExpander, calls: BlockingCalls) -> DeadlineExpander:
    expander.warm_up()
    return DeadlineExpander(expander, calls)


def context_router(config: EngramConfig, calls: BlockingCalls) -> RouteClassifier:
    """The offline rule router, or the LLM router (rules as its fallback) when a chat API is set, its
    calls run on ``calls`` within the request's budget."""
    if not config.router_llm_url:
        return RuleRouter()
    from engram.sinks.llm_http import DeadlineChat, LLMHttpConfig, OpenAIChatTransport

    client = OpenAIChatTransport(
        LLMHttpConfig(config.router_llm_url, api_key=config.llm_api_key, timeout_s=config.router_llm_timeout_s)
    )
    return LlmRouter(over_chat_api(DeadlineChat(client, calls), config.router_llm_model))


def ingest_embedder(config: EngramConfig) -> Embedder:
    """The embedder ``ENGRAM_EMBEDDER`` names (the Trace, the view and the graph engine share it)."""
    if config.embedder == "minilm":
        from engram.processors.embedding import MiniLMEmbedder

        return MiniLMEmbedder()
    if config.embedder == "http" and config.embedder_url:
        from engram.sinks.embedding_http import HttpEmbedder, HttpEmbedderConfig

        remote = HttpEmbedderConfig(config.embedder_url, config.embedder_model, config.embedder_dim, config.llm_api_key)
        return HttpEmbedder(remote)
    from engram.processors.embedding import default_embedder

    return default_embedder()


def fact_extractor(config: EngramConfig) -> Extractor:
    """The extractor ``ENGRAM_EXTRACTOR`` names: the offline patterns, or an LLM over a chat API."""
    if config.extractor == "llm" and config.extractor_llm_url:
        from engram.processors.facts.llm import LLMExtractor
        from engram.sinks.llm_http import LLMHttpConfig, OpenAIChatTransport

        transport = OpenAIChatTransport(LLMHttpConfig(config.extractor_llm_url, api_key=config.llm_api_key))
        return LLMExtractor(transport, config.extractor_llm_model)
    return PatternExtractor()


def compile_embedder(embedder: Embedder, calls: BlockingCalls) -> Embedder:
    """The compiler's embedder: a remote one (`HttpEmbedder`) runs on ``calls`` within the request's
    budget; an in-process one is called directly (a pool hop would only add latency)."""
    from engram.sinks.embedding_http import DeadlineEmbedder, HttpEmbedder

    return DeadlineEmbedder(embedder, calls) if isinstance(embedder, HttpEmbedder) else embedder


def open_stores(config: EngramConfig) -> list[NamedSink]:
    """Every configured store sink, set up (connected) and ready to apply batches."""
    sinks: list[NamedSink] = [("qdrant", vector_sink(config))]
    graph = graph_sink(config)
    if graph is not None:
        sinks.append(("graph", graph))
    for _, sink in sinks:
        sink.setup()
    return sinks
