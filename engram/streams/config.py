"""Engram's runtime configuration: one explicit frozen object, built when a command runs.

Nothing here is read at import. `EngramConfig.from_env(os.environ)` is called by the CLI; tests
build configs directly. Environment variable names are the ones docker-compose.yml sets.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import astuple, dataclass, field, replace
from pathlib import Path
from typing import Final

from engram.processors.compiler.config import BALANCED as COMPILER_BALANCED
from engram.processors.compiler.config import FAST as COMPILER_FAST
from engram.processors.compiler.config import THOROUGH as COMPILER_THOROUGH
from engram.processors.compiler.config import CompilerConfig
from engram.processors.dreaming.config import BALANCED as DREAMS
from engram.processors.dreaming.config import DreamConfig
from engram.processors.slb.config import SLB_DEFAULT, SLB_LARGE, SLB_SMALL, SlbConfig
from engram.processors.trace.config import PRESETS as TRACE_PRESETS
from engram.processors.trace.config import TraceConfig
from engram.processors.trust.tokens import TokenConfig
from engram.streams.profile import PROFILES, BrokerProfile

EMBEDDERS: Final = ("static", "minilm", "http")
EXTRACTORS: Final = ("patterns", "llm")
STATE_STORES: Final = ("disk", "memory")
# Named presets of the compiler (processors/compiler/config.py), the SLB (processors/slb/config.py)
# and the Trace (processors/trace/config.py).
COMPILER_PRESETS: Final = {"fast": COMPILER_FAST, "balanced": COMPILER_BALANCED, "thorough": COMPILER_THOROUGH}
SLB_PRESETS: Final = {"small": SLB_SMALL, "balanced": SLB_DEFAULT, "large": SLB_LARGE}
TRUE_WORDS: Final = frozenset({"1", "true", "yes", "on"})
FALSE_WORDS: Final = frozenset({"0", "false", "no", "off", ""})


class ConfigError(ValueError):
    """A configuration value is missing or malformed."""


def parse_bool(name: str, raw: str) -> bool:
    """Strict boolean parsing: "false" is False (unlike bool("false"))."""
    word = raw.strip().lower()
    if word in TRUE_WORDS:
        return True
    if word in FALSE_WORDS:
        return False
    msg = f"{name}={raw!r} is not a boolean (use one of {sorted(TRUE_WORDS | FALSE_WORDS - {''})})"
    raise ConfigError(msg)


def parse_int(name: str, raw: str) -> int:
    return int(_number(name, raw, integer=True))


def parse_float(name: str, raw: str) -> float:
    return _number(name, raw, integer=False)


def parse_positive(name: str, raw: str) -> float:
    value = parse_float(name, raw)
    if not value > 0:
        msg = f"{name}={raw!r} must be greater than 0"
        raise ConfigError(msg)
    return value


def _number(name: str, raw: str, *, integer: bool) -> float:
    try:
        return int(raw) if integer else float(raw)
    except ValueError as exc:
        msg = f"{name}={raw!r} is not {'an integer' if integer else 'a number'}"
        raise ConfigError(msg) from exc


@dataclass(frozen=True, slots=True)
class TopicNames:
    turns: str = "engram.turns"
    code: str = "engram.code"
    requests: str = "engram.context.requests"
    memory: str = "engram.memory"
    compiled: str = "engram.context.compiled"
    deadletter: str = "engram.deadletter"
    # The part of engram.memory every worker's view needs, replicated by its owner (processors/sharing.py).
    # Not archived: it is derived from engram.memory, and a replay of the log derives it again.
    shared: str = "engram.memory.shared"
    # Seed 004's graph queries (`engram query`) and their answers, keyed by user like requests.
    graph_requests: str = "engram.graph.requests"
    graph_answers: str = "engram.graph.answers"
    # Relationship tuples (processors/trust/relations.py), compacted: the last change of a tuple wins.
    relationships: str = "engram.relationships"
    # Erasure requests (`engram forget`), keyed by user like turns.
    erasures: str = "engram.erasures"

    @property
    def inputs(self) -> tuple[str, str, str]:
        return (self.turns, self.code, self.requests)

    @property
    def archived(self) -> tuple[str, ...]:
        """Every Engram topic the event log keeps (ARCHITECTURE.md, "State")."""
        return (self.turns, self.code, self.requests, self.memory, self.compiled, self.deadletter,
                self.graph_requests, self.graph_answers, self.relationships, self.erasures)  # fmt: skip

    @property
    def archived_alone(self) -> tuple[str, ...]:
        """The archived topics no consuming agent archives itself: the archive agent's topics.
        The ingest agents archive the inputs they accept, the memory agent engram.memory, the
        compile agent the requests, the graph query path its requests, the relationships agent
        the valid relationship changes and the erasure agent the erasure requests."""
        return (self.compiled, self.deadletter, self.graph_answers)

    @property
    def compacted(self) -> tuple[str, ...]:
        """The topics whose last record per key is the state (``cleanup.policy=compact``)."""
        return (self.relationships,)

    @property
    def every(self) -> tuple[str, ...]:
        """Every topic a worker reads or writes (what a deployment creates)."""
        return (*self.archived, self.shared)

    def prefixed(self, prefix: str) -> TopicNames:
        """Per-test or per-tenant topic names: ``<prefix>.engram.turns`` …"""
        if not prefix:
            return self
        return TopicNames(*(f"{prefix}.{name}" for name in astuple(self)))


@dataclass(frozen=True, slots=True)
class EngramConfig:
    """Everything a worker needs. Paths are local folders; ports are TCP ports."""

    bootstrap_servers: str = "127.0.0.1:9092"
    app_id: str = "engram"
    topics: TopicNames = field(default_factory=TopicNames)
    partitions: int = 4
    schema_registry_url: str | None = None
    data_dir: Path = Path(".engram")
    web_host: str = "127.0.0.1"
    web_port: int = 6066
    # Stores. Embedded stand-ins by default; production sets neo4j_uri / qdrant_url.
    falkordb_host: str | None = None
    falkordb_port: int | None = None
    graph_name: str = "engram"
    neo4j_uri: str | None = None
    neo4j_user: str = "neo4j"
    neo4j_password: str = ""
    qdrant_url: str | None = None
    qdrant_path: Path | None = None
    # Batching of the agents (messages, seconds).
    batch_max: int = 2000
    batch_within_s: float = 0.25
    # Backpressure (streams/pacing.py): the input partitions are paused while more engram.memory
    # records than this are written to this worker's partitions and not yet applied (0: never).
    ingest_max_backlog: int = 20_000
    # Reads first (streams/priority.py): a write step's batch (trace, facts, dreams) waits while
    # context requests wait to be answered, at most this many milliseconds (0: never waits).
    read_priority_ms: float = 100.0
    # The view's snapshot (sinks/viewstate.py): taken once at least this many memory events (and a
    # quarter of those the last one covered) were applied since the last; a restart loads it and
    # replays only the log after it. 0: never (a start replays the whole log).
    view_snapshot_events: int = 50_000
    # ... and at most this many (0: no cap) once a quarter of the history is more: a start then
    # replays at most this many events after its snapshot, whatever the history (snapshots, each
    # the size of the view, come more often: their CPU per event grows with the view).
    view_snapshot_max_tail: int = 150_000
    # The view's store (processors/retrieval/stored.py): an embedded Qdrant under the data folder
    # that dormant nodes leave the view's RAM for; the compiler's searches over the whole memory
    # take its archive with the view's live rows. Off: every node stays in RAM (as before).
    view_store: bool = True
    # With the store: the most live turns of a user the view keeps in RAM (its hot set), those
    # least recently written or used leaving for the store past it, searched there as live memory
    # (processors/retrieval/view.py). 0: no cap (every live node stays in RAM).
    view_hot_turns: int = 0
    # The agents' state tables (streams/tablestore.py): "disk" keeps their keys in a RocksDB per
    # partition under the data folder with the changelog offset they reflect, so a restart reads
    # only the changelog after it; "memory" is Faust's RAM store (a restart reads the whole
    # changelog). At most state_cache_keys decoded values per table stay in RAM; a table that had
    # keys deleted is compacted every state_compact_interval_s, so deleted values leave the disk.
    # RocksDB's own RAM (block cache and memtables of every table's stores) is state_memory_mb.
    # The cache must hold the keys a round of users touches: at 1,000 users the dream and trace
    # tables hold more than 10,000 keys each, and a 10,000-key cache read (and decoded) a million
    # values from disk in 30 minutes of `bench ingest --users 1000`, the decoding's garbage feeding
    # the collector's full passes.
    state_store: str = "disk"
    state_cache_keys: int = 100_000
    state_compact_interval_s: float = 60.0
    state_memory_mb: int = 64
    # Freed memory handed back to the OS every this many seconds (streams/trim.py; 0: never).
    malloc_trim_interval_s: float = 30.0
    # The users' parsed states (dream memories, traces) that each keyed step keeps in hand between
    # batches (streams/held.py), least recently used out; a user not in hand has its state parsed
    # from its records again, at a cost that grows with the user's history. It must cover the users
    # a worker sees in a round: users come round in turn, so a smaller cache misses on every batch
    # (512 at 1,000 users: re-parsing dream memories took a quarter of the worker's CPU).
    held_states: int = 4096
    # The optional LLM router (an OpenAI-compatible chat API); unset = the offline rule router.
    router_llm_url: str | None = None
    router_llm_model: str = "gpt-4o-mini"
    router_llm_timeout_s: float = 2.0
    llm_api_key: str | None = None
    # Python's GIL switch interval in the worker (seconds; Python's default is 0.005). Compiles run
    # on their own thread beside the event loop and the request reader's and delivery reports'
    # threads; a short interval makes the compile thread hand the GIL over every few hundred us.
    # Measured with `engram bench compile --scenario many_users` (100,000 nodes, 100 requests/s,
    # one run each, same machine and hour): at 0.0005 s compile p50 12.5 ms, 49.9 requests/s
    # answered, 20/s probe p50/p99 24.1/44.6 ms; at 0.005 s compile p50 9.9 ms, 63.9/s, probe
    # 21.1/31.9 ms. (Before the compile had its own thread, when it ran on the loop, 0.0005 was
    # better.)
    gil_switch_interval_s: float = 0.005
    # The broker profile (streams/profile.py): "kafka" in production (no workaround), "standin"
    # for the embedded tansu broker and FalkorDB (the measured workarounds of infra/standins.py).
    broker_profile: str = "kafka"
    # Dreaming (processors/dreaming/config.py): on unless ``dreaming`` is false. In event-time ms: a
    # session idle this long, and the tumbling window, each trigger a dream; episodes older than
    # dream_decay_ms may go dormant.
    dreaming: bool = True
    dream_idle_ms: int = DREAMS.idle_ms
    dream_window_ms: int = DREAMS.window_ms
    dream_decay_ms: int = DREAMS.decay_ms
    # The graph engine (processors/graph/): fed with the view, answers `engram query` requests.
    graph_queries: bool = True
    # Bearer tokens (processors/trust/tokens.py). With no key, requests are not authenticated and
    # their claimed layers are believed: for the demo and tests only. With a key, every request
    # needs a valid token, and its layers come from the principal's relationships.
    auth_key: str | None = None
    auth_algorithm: str = "HS256"
    auth_audience: str | None = None
    # The ingest embedder: "static" (distilled from MiniLM, the default), "minilm" (the full model,
    # ~45 turns/s on these cores) or "http" (an OpenAI-compatible /v1/embeddings server at
    # embedder_url, serving embedder_model of embedder_dim dims). Qdrant collections are per width.
    embedder: str = "static"
    embedder_url: str | None = None
    embedder_model: str = "text-embedding-3-small"
    embedder_dim: int = 256
    # The fact extractor: "patterns" (offline, the default) or "llm" (a chat API at extractor_llm_url;
    # any failure means no facts for that turn, never a stopped pipeline).
    extractor: str = "patterns"
    compiler_preset: str = "balanced"
    # The compile's time bound per request (seed 002's safety bound: a partial context beats none),
    # in ms; None keeps the compiler preset's (50 ms for "balanced").
    compile_timeout_ms: float | None = None
    slb_preset: str = "balanced"
    trace_preset: str = "balanced"
    extractor_llm_url: str | None = None
    extractor_llm_model: str = "gpt-4o-mini"
    # How long a store (Qdrant, the graph) may be down before the worker stops (streams/commit.py,
    # OutagePolicy): until then the memory agent holds its batch and retries with backoff.
    store_outage_limit_s: float = 600.0
    # Erasure (processors/trust/sealing.py): the event log seals user-scoped records with a key per
    # subject, kept in keystore_dir (unset: <data dir>/keys); forgetting a subject deletes its key.
    seal_eventlog: bool = True
    keystore_dir: Path | None = None

    def __post_init__(self) -> None:
        if self.ingest_max_backlog < 0:
            msg = f"ENGRAM_INGEST_MAX_BACKLOG must be 0 (no backpressure) or more, got {self.ingest_max_backlog}"
            raise ConfigError(msg)
        if self.read_priority_ms < 0:
            msg = f"ENGRAM_READ_PRIORITY_MS must be 0 (writes never wait) or more, got {self.read_priority_ms}"
            raise ConfigError(msg)
        if self.view_snapshot_max_tail < 0:
            msg = f"ENGRAM_VIEW_SNAPSHOT_MAX_TAIL must be 0 (no cap) or more, got {self.view_snapshot_max_tail}"
            raise ConfigError(msg)
        if self.view_snapshot_events < 0:
            msg = f"ENGRAM_VIEW_SNAPSHOT_EVENTS must be 0 (no snapshots) or more, got {self.view_snapshot_events}"
            raise ConfigError(msg)
        if self.state_store not in STATE_STORES:
            msg = f"unknown state store {self.state_store!r} (use one of {', '.join(STATE_STORES)})"
            raise ConfigError(msg)
        if self.malloc_trim_interval_s < 0:
            msg = f"ENGRAM_MALLOC_TRIM_INTERVAL_S must be 0 (never) or more, got {self.malloc_trim_interval_s}"
            raise ConfigError(msg)
        if self.state_memory_mb < 8:
            msg = f"ENGRAM_STATE_MEMORY_MB must be 8 or more, got {self.state_memory_mb}"
            raise ConfigError(msg)
        if self.compile_timeout_ms is not None and not self.compile_timeout_ms > 0:
            msg = f"ENGRAM_COMPILE_TIMEOUT_MS must be greater than 0, got {self.compile_timeout_ms}"
            raise ConfigError(msg)
        if self.view_hot_turns < 0:
            msg = f"ENGRAM_VIEW_HOT_TURNS must be 0 (no cap) or more, got {self.view_hot_turns}"
            raise ConfigError(msg)
        if self.view_hot_turns and not self.view_store:
            msg = "ENGRAM_VIEW_HOT_TURNS needs ENGRAM_VIEW_STORE=true: turns past the cap go to the view's store"
            raise ConfigError(msg)
        if self.held_states < 1:
            msg = f"ENGRAM_HELD_STATES must be 1 or more, got {self.held_states}"
            raise ConfigError(msg)
        if self.state_cache_keys < 1:
            msg = f"ENGRAM_STATE_CACHE_KEYS must be 1 or more, got {self.state_cache_keys}"
            raise ConfigError(msg)
        if self.broker_profile not in PROFILES:
            msg = f"unknown broker profile {self.broker_profile!r} (use one of {sorted(PROFILES)})"
            raise ConfigError(msg)
        if self.embedder not in EMBEDDERS:
            msg = f"unknown embedder {self.embedder!r} (use one of {', '.join(EMBEDDERS)})"
            raise ConfigError(msg)
        if self.extractor not in EXTRACTORS:
            msg = f"unknown extractor {self.extractor!r} (use one of {', '.join(EXTRACTORS)})"
            raise ConfigError(msg)
        if self.embedder == "http" and not self.embedder_url:
            msg = "ENGRAM_EMBEDDER=http needs ENGRAM_EMBEDDER_URL"
            raise ConfigError(msg)
        if self.extractor == "llm" and not self.extractor_llm_url:
            msg = "ENGRAM_EXTRACTOR=llm needs ENGRAM_EXTRACTOR_LLM_URL"
            raise ConfigError(msg)
        for what, name, known in (
            ("compiler", self.compiler_preset, COMPILER_PRESETS),
            ("SLB", self.slb_preset, SLB_PRESETS),
            ("trace", self.trace_preset, TRACE_PRESETS),
        ):
            if name not in known:
                msg = f"unknown {what} preset {name!r} (use one of {', '.join(known)})"
                raise ConfigError(msg)  # fmt: skip

    @property
    def presets(self) -> tuple[CompilerConfig, SlbConfig, TraceConfig]:
        """The compiler's, the SLB's and the Trace's settings, by their preset names (the compiler's
        time bound as `compile_timeout_ms` sets it)."""
        compiling = COMPILER_PRESETS[self.compiler_preset]
        if self.compile_timeout_ms is not None:
            compiling = replace(compiling, bounds=replace(compiling.bounds, timeout_ms=self.compile_timeout_ms))
        return compiling, SLB_PRESETS[self.slb_preset], TRACE_PRESETS[self.trace_preset]

    @property
    def profile(self) -> BrokerProfile:
        """The settings of `broker_profile` (validated when the config was built)."""
        return PROFILES[self.broker_profile]

    @property
    def dream(self) -> DreamConfig:
        return replace(DREAMS, idle_ms=self.dream_idle_ms, window_ms=self.dream_window_ms, decay_ms=self.dream_decay_ms)

    @property
    def tokens(self) -> TokenConfig | None:
        """The bearer-token settings, None when requests are not authenticated (no key)."""
        if not self.auth_key:
            return None
        return TokenConfig(self.auth_key, self.auth_algorithm, self.auth_audience)

    @property
    def eventlog_dir(self) -> Path:
        return self.data_dir / "eventlog"

    @property
    def keys_dir(self) -> Path:
        """The event log's subject keys (sinks/eventlog/keys.py): beside the log unless set."""
        return self.keystore_dir or self.data_dir / "keys"

    def to_env(self, topic_prefix: str = "") -> dict[str, str]:
        """The environment that makes `from_env` rebuild this config (for worker subprocesses)."""
        env = {
            "ENGRAM_BOOTSTRAP_SERVERS": self.bootstrap_servers,
            "ENGRAM_APP_ID": self.app_id,
            "ENGRAM_TOPIC_PREFIX": topic_prefix,
            "ENGRAM_PARTITIONS": str(self.partitions),
            "ENGRAM_DATA_DIR": str(self.data_dir),
            "ENGRAM_WEB_HOST": self.web_host,
            "ENGRAM_WEB_PORT": str(self.web_port),
            "ENGRAM_GRAPH_NAME": self.graph_name,
            "ENGRAM_BATCH_MAX": str(self.batch_max),
            "ENGRAM_INGEST_MAX_BACKLOG": str(self.ingest_max_backlog),
            "ENGRAM_READ_PRIORITY_MS": str(self.read_priority_ms),
            "ENGRAM_VIEW_SNAPSHOT_EVENTS": str(self.view_snapshot_events),
            "ENGRAM_VIEW_SNAPSHOT_MAX_TAIL": str(self.view_snapshot_max_tail),
            "ENGRAM_VIEW_STORE": "true" if self.view_store else "false",
            "ENGRAM_STATE_STORE": self.state_store,
            "ENGRAM_STATE_CACHE_KEYS": str(self.state_cache_keys),
            "ENGRAM_STATE_COMPACT_INTERVAL_S": str(self.state_compact_interval_s),
            "ENGRAM_STATE_MEMORY_MB": str(self.state_memory_mb),
            "ENGRAM_MALLOC_TRIM_INTERVAL_S": str(self.malloc_trim_interval_s),
            "ENGRAM_VIEW_HOT_TURNS": str(self.view_hot_turns),
            "ENGRAM_HELD_STATES": str(self.held_states),
            "ENGRAM_GIL_SWITCH_INTERVAL_S": str(self.gil_switch_interval_s),
            "ENGRAM_BROKER_PROFILE": self.broker_profile,
            "ENGRAM_COMPILER_PRESET": self.compiler_preset,
            "ENGRAM_SLB_PRESET": self.slb_preset,
            "ENGRAM_TRACE_PRESET": self.trace_preset,
            "ENGRAM_DREAMING": "true" if self.dreaming else "false",
            "ENGRAM_DREAM_IDLE_MS": str(self.dream_idle_ms),
            "ENGRAM_DREAM_WINDOW_MS": str(self.dream_window_ms),
            "ENGRAM_DREAM_DECAY_MS": str(self.dream_decay_ms),
            "ENGRAM_GRAPH_QUERIES": "true" if self.graph_queries else "false",
            "ENGRAM_EMBEDDER": self.embedder,
            "ENGRAM_EMBEDDER_MODEL": self.embedder_model,
            "ENGRAM_EMBEDDER_DIM": str(self.embedder_dim),
            "ENGRAM_EXTRACTOR": self.extractor,
            "ENGRAM_EXTRACTOR_LLM_MODEL": self.extractor_llm_model,
            "ENGRAM_STORE_OUTAGE_LIMIT_S": str(self.store_outage_limit_s),
            "ENGRAM_SEAL_EVENTLOG": "true" if self.seal_eventlog else "false",
        }
        optional = {
            "ENGRAM_SCHEMA_REGISTRY_URL": self.schema_registry_url,
            "ENGRAM_FALKORDB_HOST": self.falkordb_host,
            "ENGRAM_FALKORDB_PORT": str(self.falkordb_port) if self.falkordb_port else None,
            "ENGRAM_NEO4J_URI": self.neo4j_uri,
            "ENGRAM_QDRANT_URL": self.qdrant_url,
            "ENGRAM_QDRANT_PATH": str(self.qdrant_path) if self.qdrant_path else None,
            "ENGRAM_ROUTER_LLM_URL": self.router_llm_url,
            "ENGRAM_ROUTER_LLM_MODEL": self.router_llm_model,
            "ENGRAM_ROUTER_LLM_TIMEOUT_S": str(self.router_llm_timeout_s),
            "ENGRAM_LLM_API_KEY": self.llm_api_key,
            "ENGRAM_AUTH_KEY": self.auth_key,
            "ENGRAM_AUTH_ALGORITHM": self.auth_algorithm,
            "ENGRAM_AUTH_AUDIENCE": self.auth_audience,
            "ENGRAM_EMBEDDER_URL": self.embedder_url,
            "ENGRAM_EXTRACTOR_LLM_URL": self.extractor_llm_url,
            "ENGRAM_KEYSTORE_DIR": str(self.keystore_dir) if self.keystore_dir else None,
            "ENGRAM_COMPILE_TIMEOUT_MS": str(self.compile_timeout_ms) if self.compile_timeout_ms else None,
        }
        env.update({k: v for k, v in optional.items() if v})
        return env

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> EngramConfig:
        base = cls()
        get = env.get
        port = get("ENGRAM_FALKORDB_PORT")
        qpath = get("ENGRAM_QDRANT_PATH")
        keys = get("ENGRAM_KEYSTORE_DIR")
        timeout = get("ENGRAM_COMPILE_TIMEOUT_MS")
        return cls(
            bootstrap_servers=get("ENGRAM_BOOTSTRAP_SERVERS", base.bootstrap_servers),
            app_id=get("ENGRAM_APP_ID", base.app_id),
            topics=base.topics.prefixed(get("ENGRAM_TOPIC_PREFIX", "")),
            partitions=parse_int("ENGRAM_PARTITIONS", get("ENGRAM_PARTITIONS", str(base.partitions))),
            schema_registry_url=get("ENGRAM_SCHEMA_REGISTRY_URL") or None,
            data_dir=Path(get("ENGRAM_DATA_DIR", str(base.data_dir))),
            web_host=get("ENGRAM_WEB_HOST", base.web_host),
            web_port=parse_int("ENGRAM_WEB_PORT", get("ENGRAM_WEB_PORT", str(base.web_port))),
            falkordb_host=get("ENGRAM_FALKORDB_HOST") or None,
            falkordb_port=parse_int("ENGRAM_FALKORDB_PORT", port) if port else None,
            graph_name=get("ENGRAM_GRAPH_NAME", base.graph_name),
            neo4j_uri=get("ENGRAM_NEO4J_URI") or None,
            neo4j_user=get("ENGRAM_NEO4J_USER", base.neo4j_user),
            neo4j_password=get("ENGRAM_NEO4J_PASSWORD", base.neo4j_password),
            qdrant_url=get("ENGRAM_QDRANT_URL") or None,
            qdrant_path=Path(qpath) if qpath else None,
            batch_max=parse_int("ENGRAM_BATCH_MAX", get("ENGRAM_BATCH_MAX", str(base.batch_max))),
            ingest_max_backlog=parse_int(
                "ENGRAM_INGEST_MAX_BACKLOG", get("ENGRAM_INGEST_MAX_BACKLOG", str(base.ingest_max_backlog))
            ),
            read_priority_ms=parse_float(
                "ENGRAM_READ_PRIORITY_MS", get("ENGRAM_READ_PRIORITY_MS", str(base.read_priority_ms))
            ),
            view_snapshot_events=parse_int(
                "ENGRAM_VIEW_SNAPSHOT_EVENTS", get("ENGRAM_VIEW_SNAPSHOT_EVENTS", str(base.view_snapshot_events))
            ),
            view_snapshot_max_tail=parse_int(
                "ENGRAM_VIEW_SNAPSHOT_MAX_TAIL",
                get("ENGRAM_VIEW_SNAPSHOT_MAX_TAIL", str(base.view_snapshot_max_tail)),
            ),
            view_store=parse_bool("ENGRAM_VIEW_STORE", get("ENGRAM_VIEW_STORE", str(base.view_store).lower())),
            state_store=get("ENGRAM_STATE_STORE", base.state_store),
            state_cache_keys=parse_int(
                "ENGRAM_STATE_CACHE_KEYS", get("ENGRAM_STATE_CACHE_KEYS", str(base.state_cache_keys))
            ),
            state_compact_interval_s=parse_positive(
                "ENGRAM_STATE_COMPACT_INTERVAL_S",
                get("ENGRAM_STATE_COMPACT_INTERVAL_S", str(base.state_compact_interval_s)),
            ),
            state_memory_mb=parse_int(
                "ENGRAM_STATE_MEMORY_MB", get("ENGRAM_STATE_MEMORY_MB", str(base.state_memory_mb))
            ),
            malloc_trim_interval_s=parse_float(
                "ENGRAM_MALLOC_TRIM_INTERVAL_S",
                get("ENGRAM_MALLOC_TRIM_INTERVAL_S", str(base.malloc_trim_interval_s)),
            ),
            view_hot_turns=parse_int("ENGRAM_VIEW_HOT_TURNS", get("ENGRAM_VIEW_HOT_TURNS", str(base.view_hot_turns))),
            held_states=parse_int("ENGRAM_HELD_STATES", get("ENGRAM_HELD_STATES", str(base.held_states))),
            router_llm_url=get("ENGRAM_ROUTER_LLM_URL") or None,
            router_llm_model=get("ENGRAM_ROUTER_LLM_MODEL", base.router_llm_model),
            router_llm_timeout_s=parse_float(
                "ENGRAM_ROUTER_LLM_TIMEOUT_S", get("ENGRAM_ROUTER_LLM_TIMEOUT_S", str(base.router_llm_timeout_s))
            ),
            llm_api_key=get("ENGRAM_LLM_API_KEY") or None,
            gil_switch_interval_s=parse_positive(
                "ENGRAM_GIL_SWITCH_INTERVAL_S",
                get("ENGRAM_GIL_SWITCH_INTERVAL_S", str(base.gil_switch_interval_s)),
            ),
            broker_profile=parse_broker_profile(env),
            dreaming=parse_bool("ENGRAM_DREAMING", get("ENGRAM_DREAMING", "true")),
            dream_idle_ms=parse_int("ENGRAM_DREAM_IDLE_MS", get("ENGRAM_DREAM_IDLE_MS", str(base.dream_idle_ms))),
            dream_window_ms=parse_int(
                "ENGRAM_DREAM_WINDOW_MS", get("ENGRAM_DREAM_WINDOW_MS", str(base.dream_window_ms))
            ),
            dream_decay_ms=parse_int("ENGRAM_DREAM_DECAY_MS", get("ENGRAM_DREAM_DECAY_MS", str(base.dream_decay_ms))),
            graph_queries=parse_bool("ENGRAM_GRAPH_QUERIES", get("ENGRAM_GRAPH_QUERIES", "true")),
            auth_key=get("ENGRAM_AUTH_KEY") or None,
            auth_algorithm=get("ENGRAM_AUTH_ALGORITHM", base.auth_algorithm),
            auth_audience=get("ENGRAM_AUTH_AUDIENCE") or None,
            embedder=get("ENGRAM_EMBEDDER", base.embedder),
            embedder_url=get("ENGRAM_EMBEDDER_URL") or None,
            embedder_model=get("ENGRAM_EMBEDDER_MODEL", base.embedder_model),
            embedder_dim=parse_int("ENGRAM_EMBEDDER_DIM", get("ENGRAM_EMBEDDER_DIM", str(base.embedder_dim))),
            extractor=get("ENGRAM_EXTRACTOR", base.extractor),
            compiler_preset=get("ENGRAM_COMPILER_PRESET", base.compiler_preset),
            compile_timeout_ms=parse_positive("ENGRAM_COMPILE_TIMEOUT_MS", timeout) if timeout else None,
            slb_preset=get("ENGRAM_SLB_PRESET", base.slb_preset),
            trace_preset=get("ENGRAM_TRACE_PRESET", base.trace_preset),
            extractor_llm_url=get("ENGRAM_EXTRACTOR_LLM_URL") or None,
            extractor_llm_model=get("ENGRAM_EXTRACTOR_LLM_MODEL", base.extractor_llm_model),
            store_outage_limit_s=parse_positive(
                "ENGRAM_STORE_OUTAGE_LIMIT_S", get("ENGRAM_STORE_OUTAGE_LIMIT_S", str(base.store_outage_limit_s))
            ),
            seal_eventlog=parse_bool("ENGRAM_SEAL_EVENTLOG", get("ENGRAM_SEAL_EVENTLOG", "true")),
            keystore_dir=Path(keys) if keys else None,
        )


def parse_broker_profile(env: Mapping[str, str]) -> str:
    """``ENGRAM_BROKER_PROFILE`` ("kafka" or "standin"); when it is unset, the older
    ``ENGRAM_STANDIN=true`` still means "standin" (a strict boolean). Unknown names raise."""
    name = (env.get("ENGRAM_BROKER_PROFILE") or "").strip().lower()
    if not name:
        return "standin" if parse_bool("ENGRAM_STANDIN", env.get("ENGRAM_STANDIN", "false")) else "kafka"
    if name not in PROFILES:
        msg = f"ENGRAM_BROKER_PROFILE={name!r} is not a broker profile (use one of {sorted(PROFILES)})"
        raise ConfigError(msg)
    return name
