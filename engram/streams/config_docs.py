"""The configuration reference: every ``ENGRAM_*`` variable a worker reads, its default and meaning.

`reference_markdown` renders it from `EngramConfig` (defaults come from the config object itself);
docs/configuration.md carries that rendering between markers and a test holds the two, and the variables
`EngramConfig.from_env` reads, to each other. `engram config` prints it.
"""

from __future__ import annotations

from typing import Final

from engram.streams.config import EngramConfig

DESCRIPTIONS: Final[dict[str, str]] = {
    "ENGRAM_BOOTSTRAP_SERVERS": "Kafka bootstrap servers, host:port[,host:port]",
    "ENGRAM_APP_ID": "Faust app id: consumer groups and table changelogs are named after it",
    "ENGRAM_TOPIC_PREFIX": "prefix for every topic name (per-tenant or per-test topic sets)",
    "ENGRAM_PARTITIONS": "partitions of the topics a worker creates",
    "ENGRAM_SCHEMA_REGISTRY_URL": "Confluent schema registry; unset: Avro single-object encoding",
    "ENGRAM_DATA_DIR": "the event log and Faust's table state",
    "ENGRAM_WEB_HOST": "address of /metrics, /health, /ready and /view",
    "ENGRAM_WEB_PORT": "port of the same",
    "ENGRAM_FALKORDB_HOST": "FalkorDB host (the embedded graph store)",
    "ENGRAM_FALKORDB_PORT": "FalkorDB port",
    "ENGRAM_GRAPH_NAME": "graph name in FalkorDB",
    "ENGRAM_NEO4J_URI": "Neo4j bolt URI; wins over FalkorDB when set",
    "ENGRAM_NEO4J_USER": "Neo4j user",
    "ENGRAM_NEO4J_PASSWORD": "Neo4j password",
    "ENGRAM_QDRANT_URL": "Qdrant server URL; unset: the embedded qdrant-edge under the data folder",
    "ENGRAM_QDRANT_PATH": "qdrant-edge folder (default: <data dir>/qdrant)",
    "ENGRAM_BATCH_MAX": "most records an agent takes in one batch",
    "ENGRAM_INGEST_MAX_BACKLOG": "input partitions pause while more engram.memory records are unapplied (0: never)",
    "ENGRAM_READ_PRIORITY_MS": "longest a write step's batch waits for waiting context requests, ms (0: never waits)",
    "ENGRAM_VIEW_SNAPSHOT_EVENTS": "memory events applied between two snapshots of the view a restart loads (0: none)",
    "ENGRAM_VIEW_SNAPSHOT_MAX_TAIL": "most memory events between two view snapshots (0: a quarter of the history)",
    "ENGRAM_VIEW_STORE": "dormant nodes leave the view's RAM for an embedded Qdrant under the data folder, "
    "searched with the live nodes on an SLB miss (false: all in RAM)",
    "ENGRAM_VIEW_HOT_TURNS": "most live turns of a user the view keeps in RAM, the least recently written or used "
    "leaving for the view's store, searched there as live memory (0: no cap)",
    "ENGRAM_STATE_STORE": "disk (RocksDB per partition, a restart reads the changelog's tail) or memory (Faust's)",
    "ENGRAM_STATE_CACHE_KEYS": "decoded state values per table kept in RAM (the rest are read from disk)",
    "ENGRAM_STATE_COMPACT_INTERVAL_S": "seconds between compactions that remove deleted state values from disk",
    "ENGRAM_MALLOC_TRIM_INTERVAL_S": "seconds between handing the memory the worker freed back to the OS (0: never)",
    "ENGRAM_STATE_MEMORY_MB": "RAM of every state store's RocksDB together (block cache and memtables)",
    "ENGRAM_HELD_STATES": "parsed user states (dream memories, traces) kept between batches; at least a round of users",
    "ENGRAM_ROUTER_LLM_URL": "OpenAI-compatible /v1 base URL for the context router; unset: rules",
    "ENGRAM_ROUTER_LLM_MODEL": "the router's model",
    "ENGRAM_ROUTER_LLM_TIMEOUT_S": "the router's timeout; on any failure the rules route",
    "ENGRAM_LLM_API_KEY": "API key for the router, the LLM extractor and the HTTP embedder",
    "ENGRAM_GIL_SWITCH_INTERVAL_S": "the worker's Python switch interval (seconds)",
    "ENGRAM_BROKER_PROFILE": "kafka, or standin for the embedded tansu broker's measured workarounds",
    "ENGRAM_STANDIN": "older spelling of ENGRAM_BROKER_PROFILE=standin (used when the profile is unset)",
    "ENGRAM_DREAMING": "dreaming on or off",
    "ENGRAM_DREAM_IDLE_MS": "a session idle this long (event time) dreams",
    "ENGRAM_DREAM_WINDOW_MS": "the tumbling dream window (event time)",
    "ENGRAM_DREAM_DECAY_MS": "episodes older than this may go dormant",
    "ENGRAM_GRAPH_QUERIES": "the graph engine behind engram query on or off",
    "ENGRAM_AUTH_KEY": "token key (HS256 secret of 32+ bytes, or a PEM public key); unset: no authentication",
    "ENGRAM_AUTH_ALGORITHM": "HS256, RS256 or ES256",
    "ENGRAM_AUTH_AUDIENCE": "required token audience, when set",
    "ENGRAM_EMBEDDER": "static, minilm or http",
    "ENGRAM_EMBEDDER_URL": "the HTTP embedder's server root (/v1/embeddings is appended)",
    "ENGRAM_EMBEDDER_MODEL": "the HTTP embedder's model",
    "ENGRAM_EMBEDDER_DIM": "the HTTP embedder's vector width",
    "ENGRAM_EXTRACTOR": "patterns or llm",
    "ENGRAM_COMPILER_PRESET": "the context compiler's bounds and weights: fast, balanced or thorough",
    "ENGRAM_COMPILE_TIMEOUT_MS": "time bound of one compile, ms (a partial context beats none); unset: the preset's",
    "ENGRAM_SLB_PRESET": "the SLB's size per session: small (16 centroids), balanced (32) or large (64)",
    "ENGRAM_TRACE_PRESET": "the Trace's concept granularity: fine, balanced or coarse",
    "ENGRAM_EXTRACTOR_LLM_URL": "the LLM extractor's OpenAI-compatible /v1 base URL",
    "ENGRAM_EXTRACTOR_LLM_MODEL": "the LLM extractor's model",
    "ENGRAM_STORE_OUTAGE_LIMIT_S": "how long a store may be down (batches held, retried) before the worker stops",
    "ENGRAM_SEAL_EVENTLOG": "seal user-scoped event-log records with per-subject keys (erasure deletes the key)",
    "ENGRAM_KEYSTORE_DIR": "folder of those subject keys (default: <data dir>/keys)",
}
BEGIN: Final = "<!-- config reference: generated by `engram config`; do not edit -->"
END: Final = "<!-- end of config reference -->"


def default_of(variable: str, config: EngramConfig) -> str:
    """The variable's default, read from the config object."""
    if variable == "ENGRAM_TOPIC_PREFIX":
        return "unset"
    if variable == "ENGRAM_STANDIN":
        return "false"
    value = getattr(config, variable.removeprefix("ENGRAM_").lower(), None)
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def reference_markdown() -> str:
    config = EngramConfig()
    rows = [f"| `{name}` | `{default_of(name, config)}` | {text} |" for name, text in DESCRIPTIONS.items()]
    return "\n".join([BEGIN, "| variable | default | what it sets |", "|---|---|---|", *rows, END])
