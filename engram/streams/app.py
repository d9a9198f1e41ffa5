"""The Faust app, built by a factory from an explicit config (nothing configured at import).

Wiring only: topics (streams/topics.py), agents (streams/agents/), the /metrics page, and the
sinks they flush. The logic lives in processors/ and the I/O in sinks/.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any, cast

import faust
from faust.tables.manager import TableManager
from faust.types import TP, TopicT

from engram.processors.compiler import ContextCompiler
from engram.processors.dreaming.dream import Dreamer
from engram.processors.slb import LookasideTable
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.state import TraceState
from engram.processors.trust.authorize import Gate
from engram.processors.trust.tokens import TokenVerifier
from engram.schemas.record import RawRecord
from engram.sinks.deadline import BlockingCalls
from engram.sinks.eventlog.sealed import SealingPolicy
from engram.sinks.eventlog.segment import AppendResult
from engram.sinks.eventlog.sink import EventLogSink
from engram.sinks.statestore import StateStoreMemory
from engram.streams.admin import event_producer_settings
from engram.streams.agents.archive import archive
from engram.streams.agents.batches import BatchHandler, register_batch_agent
from engram.streams.agents.compile import ContextService, FactsReader, register_request_path
from engram.streams.agents.erasure import Eraser
from engram.streams.agents.graph_queries import GraphQueryService, register_graph_path
from engram.streams.agents.ingest import Ingestor, KeyedSteps, MemoryOutputs, Step, WriteCheck
from engram.streams.agents.relationships import Loaded, admit_relationships, register_relationship_follower
from engram.streams.agents.requests import reply_producer_settings, request_reader
from engram.streams.agents.stores import MemoryApplier, Replica
from engram.streams.codecs import Codec, TopicCodecs
from engram.streams.commit import CommitTargets, OutagePolicy, StateTable
from engram.streams.config import EngramConfig
from engram.streams.delivery import ReplyTopics
from engram.streams.dream_step import DreamStep
from engram.streams.edge import Admission
from engram.streams.facts_api import logged_fact_log, memory_publisher, register_facts_api
from engram.streams.flow import memory_pace
from engram.streams.follow import memory_follower, view_catch_up
from engram.streams.health import Readiness
from engram.streams.held import HeldStates
from engram.streams.index_page import register_index
from engram.streams.metrics import EngramMetrics
from engram.streams.output import EventProducer
from engram.streams.pacing import MemoryPace
from engram.streams.priority import ReadPriority
from engram.streams.repairs.changelog import ChangelogProducer
from engram.streams.repairs.gaps import gap_repair
from engram.streams.repairs.recovery import ClearFirstTables, FetchedEndsTables
from engram.streams.restore import restored_view
from engram.streams.sealing import eventlog_sealing
from engram.streams.signals import on_partitions
from engram.streams.steps import CodeGraphStep, FactsStep, TraceStep
from engram.streams.stores import (
    compile_embedder,
    context_router,
    fact_extractor,
    graph_expander,
    ingest_embedder,
    open_stores,
)
from engram.streams.tables import STATE_MAX_BYTES, DiskCommits, FaustTable, state_table
from engram.streams.topics import EngramTopics, declare_topics
from engram.streams.trim import Trimmer

# Prometheus text format 0.0.4; aiohttp sets the charset itself and rejects one in content_type.
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4"
READY_REFRESH_S = 10.0  # how often engram_worker_ready is brought up to date


@dataclass
class EngramApp:
    app: faust.App
    config: EngramConfig
    topics: EngramTopics
    metrics: EngramMetrics
    eventlogs: list[EventLogSink]  # one per archiving agent (a sink's buffers are not shared)


def faust_settings(config: EngramConfig) -> dict[str, Any]:
    settings: dict[str, Any] = {
        "broker": f"kafka://{config.bootstrap_servers}",
        "store": "memory://",
        "web_host": config.web_host,
        "web_port": config.web_port,
        "web_bind": config.web_host,
        "topic_partitions": config.partitions,
        "consumer_auto_offset_reset": "earliest",
        "key_serializer": "raw",
        "value_serializer": "raw",
        "datadir": str(config.data_dir / "faust"),
        "producer_acks": -1,
        "producer_max_request_size": STATE_MAX_BYTES,
        # Faust's own recovery can drop queued input records on restart, on any broker
        # (streams/repairs/recovery.py), so this is not part of the broker profile; the stand-in's also reads
        # each changelog to the end a fetch finds.
        "TableManager": FetchedEndsTables if config.profile.fetch_changelog_ends else ClearFirstTables,
        # At-least-once with idempotent sinks (ARCHITECTURE.md); tansu has no transactions either.
        "processing_guarantee": "at_least_once",
    }
    settings.update(config.profile.faust_settings())
    return settings


def context_service(
    config: EngramConfig,
    codecs: TopicCodecs,
    trace: TraceBuilder,
    producer: EventProducer,
    metrics: EngramMetrics,
    slb_table: StateTable,
) -> ContextService:
    """The compile path over an in-process view, restored from its snapshot and the event log's
    engram.memory after it (streams/restore.py).
    Its blocking I/O (graph store, LLM router, a remote embedder) runs on ``calls``, off the loop."""
    restored = restored_view(config, codecs, trace)
    view, graph = restored.view, restored.graph
    metrics.view_start_events.labels("snapshot").set(restored.events - restored.replayed)
    metrics.view_start_events.labels("log").set(restored.replayed)
    gate = Gate(TokenVerifier(config.tokens) if config.tokens is not None else None)
    compiling, slb_config, _ = config.presets
    slb = LookasideTable(slb_config)
    calls = BlockingCalls()
    store = graph_expander(config, calls)
    embedder = compile_embedder(trace.embedder, calls)
    router = context_router(config, calls)
    compiler = ContextCompiler(view, embedder, trace.token_counter, compiling, router=router, slb=slb, store=store)
    compiler.warm_up()  # before the first request, not inside its deadline
    names = config.topics
    return ContextService(
        view,
        compiler,
        slb,
        producer,
        names.compiled,
        names.memory,
        names.deadletter,
        metrics,
        slb_table=slb_table,
        request_codec=codecs.requests,
        compiled_codec=codecs.compiled,
        memory_codec=codecs.memory,
        deadletter_codec=codecs.deadletter,
        applied=restored.applied,
        replica_applied=restored.replica_applied,
        snapshots=restored.snapshots,
        view_store=restored.store,
        events_applied=restored.events,
        calls=calls,
        graph=graph,
        gate=gate,
        reply_topics=ReplyTopics(config.bootstrap_servers, config.partitions),
    )


@dataclass
class Wiring:
    """What the agents of one worker share while they are registered (nothing at run time but the
    producer, the tables and the view, each documented where it is made)."""

    app: faust.App
    config: EngramConfig
    topics: EngramTopics
    codecs: TopicCodecs
    metrics: EngramMetrics
    eventlogs: list[EventLogSink] = field(default_factory=list)
    sealing: SealingPolicy | None = None  # one key store for every sink (streams/sealing.py)
    relationships_loaded: Loaded = field(default_factory=Loaded)  # streams/agents/relationships.py
    tables: dict[str, FaustTable] = field(default_factory=dict)
    changelog: ChangelogProducer | None = None  # what the tables' changelog records go through
    state_memory: StateStoreMemory | None = None  # the RocksDB budget the tables' stores share
    state_commits: DiskCommits = field(default_factory=DiskCommits)  # the tables on disk, committed together

    def eventlog(self) -> EventLogSink:
        """An agent's own event-log sink: each topic's segments are written by one agent only."""
        sink = EventLogSink(self.config.eventlog_dir, sealing=self.sealing, on_append=self._count_segments)
        sink.setup()
        self.eventlogs.append(sink)
        return sink

    def _count_segments(self, topic: str, _partition: int, result: AppendResult) -> None:
        if result.new_segment:
            self.metrics.eventlog_segments.labels(topic).inc()

    def admission(self, codec: Codec, schema_name: str, stage: str) -> Admission[Any]:
        return Admission(codec, schema_name, stage, self.config.topics.deadletter, self.codecs.deadletter, self.metrics)

    def table(self, name: str) -> FaustTable:
        """The worker's table ``name`` (one per name, whichever agents share it)."""
        found = self.tables.get(name)
        if found is None:
            if self.changelog is None:
                msg = f"table {name!r} wired before the producer its changelog goes through (a wiring bug)"
                raise ValueError(msg)
            if self.state_memory is None:
                self.state_memory = StateStoreMemory(self.config.state_memory_mb * 1024 * 1024)
            table = state_table(self.app, name, self.config, self.metrics, self.state_memory)
            found = self.tables[name] = FaustTable(table, self.changelog, self.state_commits)
        return found

    def batch_agent(self, topic: TopicT, name: str, handle: BatchHandler) -> None:
        """A batch agent that reads back offsets Faust never delivered (streams/repairs/gaps.py)."""
        gaps = gap_repair(self.config.bootstrap_servers, self.config.app_id, self.metrics, name)
        c = self.config
        register_batch_agent(self.app, topic, name, handle, c.batch_max, c.batch_within_s, gaps, self.metrics)


def register_archive(w: Wiring) -> None:
    """Compiled contexts and dead letters → the event log (streams/agents/archive.py)."""
    targets = CommitTargets(w.eventlog(), metrics=w.metrics)
    w.batch_agent(w.topics.archived, "engram.archive", partial(archive, targets=targets))


def register_relationships(w: Wiring, producer: EventProducer, gate: Gate) -> None:
    """Relationship changes → the event log (valid) or dead letters, and every worker's gate."""
    admission = w.admission(w.codecs.relationships, "RelationshipChanged", "relationships")
    targets = CommitTargets(w.eventlog(), producer=producer, metrics=w.metrics)
    w.batch_agent(w.topics.relationships, "engram.relationships", partial(admit_relationships, admission=admission,
                                                                         targets=targets))  # fmt: skip
    register_relationship_follower(w.app, w.config, gate.relationships, w.metrics, w.relationships_loaded)


def register_ingest(
    w: Wiring, producer: EventProducer, trace: TraceBuilder, gate: Gate, pace: MemoryPace, reads: ReadPriority
) -> None:
    """Turns and code changes → engram.memory (streams/agents/ingest.py), each checked against
    what its producer may write (the gate), taken in while the memory agent keeps up (``pace``),
    each batch after the requests waiting (``reads``)."""
    outputs = MemoryOutputs(w.config.topics.memory, w.codecs.memory, w.metrics)
    held: HeldStates[TraceState] = HeldStates(w.config.held_states)
    inputs: list[tuple[TopicT, Codec, str, Step]] = [
        (w.topics.turns, w.codecs.turns, "ConversationTurn", (TraceStep(trace, held=held), w.table("trace-state"))),
        (w.topics.code, w.codecs.code, "CodeChange", (CodeGraphStep(trace.token_counter), w.table("code-state"))),
    ]
    for topic, codec, schema_name, step in inputs:
        admission = w.admission(codec, schema_name, "ingest")
        writes = WriteCheck(gate, codec, w.relationships_loaded) if gate.closed else None
        ingestor = Ingestor(admission, KeyedSteps([step], admission, outputs, reads), w.metrics, writes, pace)
        targets = CommitTargets(w.eventlog(), producer=producer, metrics=w.metrics)
        w.batch_agent(topic, f"engram.ingest.{schema_name}", partial(ingestor.ingest, targets=targets))


def register_erasures(w: Wiring, producer: EventProducer, gate: Gate) -> None:
    """Erasure requests → a SubjectErased for every projection, and the user's log key deleted
    (streams/agents/erasure.py)."""
    admission = w.admission(w.codecs.erasures, "ErasureRequested", "erasure")
    writes = WriteCheck(gate, w.codecs.erasures, w.relationships_loaded) if gate.closed else None
    outputs = MemoryOutputs(w.config.topics.memory, w.codecs.memory, w.metrics)
    keys = w.sealing.keys if w.sealing is not None else None
    eraser = Eraser(admission, outputs, w.table("trace-state"), w.metrics, writes, keys)
    targets = CommitTargets(w.eventlog(), producer=producer, metrics=w.metrics)
    w.batch_agent(w.topics.erasures, "engram.erasures", partial(eraser.erase, targets=targets))


def register_memory(
    w: Wiring, producer: EventProducer, facts_table: FaustTable, service: ContextService, pace: MemoryPace,
    reads: ReadPriority,
) -> None:  # fmt: skip
    """engram.memory → the event log, the stores and the view, then the facts (streams/agents/stores.py);
    each committed batch moves ``pace`` on; the facts and dream steps go after the requests waiting (``reads``)."""
    memory = w.admission(w.codecs.memory, "MemoryEvent", "sink")
    outputs = MemoryOutputs(w.config.topics.memory, w.codecs.memory, w.metrics)
    replica = Replica(w.config.topics.shared, w.config.topics.code)
    metrics = w.metrics
    dreamer = Dreamer(w.config.dream, service.compiler.tokens.count, on_report=metrics.count_dream)
    dreams = DreamStep(dreamer, on_failure=metrics.dreams_failed.inc, cache=HeldStates(w.config.held_states))
    facts = KeyedSteps([(FactsStep(extractor=fact_extractor(w.config)), facts_table)], memory, outputs, reads)
    dreaming = KeyedSteps([(dreams, w.table("dream-state"))], memory, outputs, reads) if w.config.dreaming else None
    applier = MemoryApplier(memory, facts, replica, dreaming)
    outage = OutagePolicy(w.config.store_outage_limit_s)
    targets = CommitTargets(
        w.eventlog(), open_stores(w.config), [service.observe], producer=producer, metrics=w.metrics, outage=outage
    )

    async def apply(records: Sequence[RawRecord]) -> None:
        await applier.apply(records, targets=targets)
        pace.applied(records)

    w.batch_agent(w.topics.memory, "engram.stores", apply)
    memory_topic = w.config.topics.memory

    async def count_owned(assigned: Iterable[TP]) -> None:
        owned = sum(1 for tp in assigned if tp.topic == memory_topic)
        w.metrics.assigned_partitions.labels(memory_topic).set(owned)

    on_partitions(w.app.on_partitions_assigned, count_owned)


def create_app(config: EngramConfig, metrics: EngramMetrics | None = None) -> EngramApp:
    config.profile.apply_worker_fetch_wait()
    app = faust.App(config.app_id, **faust_settings(config))
    # Derived events and the tables' changelog records (a state record can be as large as a table allows).
    producer = EventProducer(
        config.bootstrap_servers, extra={**event_producer_settings(config), "message.max.bytes": STATE_MAX_BYTES}
    )
    w = Wiring(app, config, declare_topics(app, config), TopicCodecs.for_config(config), metrics or EngramMetrics(),
               sealing=eventlog_sealing(config), changelog=producer)  # fmt: skip
    register_archive(w)
    trace = TraceBuilder(config.presets[2], embedder=ingest_embedder(config))
    # The compile path has its own producer: its per-batch flush then waits only for its own
    # replies, not for an ingest's derived events, and linger 0 sends a reply at once.
    compile_producer = EventProducer(config.bootstrap_servers, linger_ms=0, extra=reply_producer_settings(config))
    service = context_service(config, w.codecs, trace, compile_producer, w.metrics, w.table("slb-state"))
    pace = memory_pace(app, config, producer, w.metrics)
    reads = ReadPriority(config.read_priority_ms / 1000.0, w.metrics)
    register_ingest(w, producer, trace, service.gate, pace, reads)
    register_erasures(w, producer, service.gate)
    service.keys = w.sealing.keys if w.sealing is not None else None
    facts_table = w.table("facts-state")
    service.facts_block = FactsReader(facts_table, service.view)
    service.catch_up = view_catch_up(config, w.metrics)
    register_memory(w, producer, facts_table, service, pace, reads)
    facts_changes = memory_publisher(config.bootstrap_servers, config.topics.memory, w.codecs.memory)
    fact_log = logged_fact_log(config, w.codecs.memory)
    register_facts_api(app, facts_table, service.gate, facts_changes, w.metrics, fact_log)
    register_index(app, config.app_id)
    register_relationships(w, producer, service.gate)
    register_request_path(
        app, service, request_reader(config), CommitTargets(w.eventlog(), metrics=w.metrics), config.topics.memory,
        follower=(memory_follower(config), config.partitions), reads=reads,
    )  # fmt: skip
    if service.graph is not None:
        names = config.topics
        graph = GraphQueryService(service.graph, service, names.graph_answers, w.codecs.graph_requests,
                                  w.codecs.graph_answers)  # fmt: skip
        targets = CommitTargets(w.eventlog(), metrics=w.metrics)
        register_graph_path(app, graph, request_reader(config, graph=True), targets, names.memory)
    metrics = w.metrics

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        return web.bytes(metrics.exposition(), content_type=EXPOSITION_CONTENT_TYPE)

    readiness = Readiness(config.bootstrap_servers)

    @app.page("/health")
    async def health_page(web: Any, request: Any) -> Any:
        return web.json({"live": True})

    async def ready_checks() -> dict[str, bool]:
        recovery = cast(TableManager, app.tables).recovery
        checks = await readiness.checks(recovery.completed.is_set() and not recovery.in_recovery)
        metrics.ready.set(1 if all(checks.values()) else 0)
        return checks

    @app.page("/ready")
    async def ready_page(web: Any, request: Any) -> Any:
        checks = await ready_checks()
        ready = all(checks.values())
        return web.json({"ready": ready, **checks}, status=200 if ready else 503)

    async def refresh_ready() -> None:  # engram_worker_ready for Prometheus, which scrapes /metrics only
        while True:
            await ready_checks()
            await asyncio.sleep(READY_REFRESH_S)

    app.task(refresh_ready)
    if config.malloc_trim_interval_s > 0:
        trimmer = Trimmer()

        async def trim_memory() -> None:
            metrics.malloc_trim_seconds.inc(await asyncio.to_thread(trimmer))

        app.timer(config.malloc_trim_interval_s, name="engram.trim")(trim_memory)

    @app.page("/view")
    async def view_page(web: Any, request: Any) -> Any:
        """What this worker's in-process view holds: node counts by layer and by user (and its
        content hash with ``?digest=1``)."""
        return web.json(await service.holdings(digest=request.query.get("digest") in {"1", "true"}))

    return EngramApp(app, config, w.topics, metrics, w.eventlogs)
