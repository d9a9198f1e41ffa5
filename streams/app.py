"""The Faust app, built by a factory from an explicit config (nothing configured at import).

Wiring only: topics (streams/topics.py), agents (streams/agents/), the /metrics page, and the
sinks they flush. The logic lives in processors/ and the I/O in sinks/.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import faust

from processors.compiler import BALANCED, ContextCompiler
from processors.retrieval.applied import AppliedOffsets, OffsetEvent
from processors.retrieval.view import MemoryView
from processors.slb import SLB_DEFAULT, LookasideTable
from processors.trace.builder import TraceBuilder
from sinks.eventlog.reader import EventLogReader
from sinks.eventlog.sink import EventLogSink
from streams.admin import event_producer_settings
from streams.agents.archive import Archiver, register_archive_agent
from streams.agents.compile import ContextService, FactsReader, register_compile_agent
from streams.agents.ingest import Ingestor, KeyedProcessor, register_ingest_agent
from streams.agents.requests import reply_producer_settings, request_fetcher
from streams.agents.stores import StoreApplier, register_store_agent
from streams.codecs import TopicCodecs
from streams.config import EngramConfig
from streams.follow import memory_follower, view_catch_up
from streams.gaps import gap_repair
from streams.metrics import EngramMetrics
from streams.output import EventProducer
from streams.resume import ClearFirstTables
from streams.steps import CodeGraphStep, FactsStep, TraceStep
from streams.stores import context_router, graph_expander, open_stores
from streams.topics import EngramTopics, declare_topics

# Prometheus text format 0.0.4; aiohttp sets the charset itself and rejects one in content_type.
EXPOSITION_CONTENT_TYPE = "text/plain; version=0.0.4"


@dataclass
class EngramApp:
    app: Any
    config: EngramConfig
    topics: EngramTopics
    metrics: EngramMetrics
    eventlog: EventLogSink


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
        # Faust's own recovery can drop queued input records on restart (streams/resume.py).
        "TableManager": ClearFirstTables,
    }
    if config.standin:
        from infra.standins import standin_faust_settings

        settings.update(standin_faust_settings(table_recovery=True))
    return settings


# A busy user's trace state is a few hundred KiB of JSON and grows with their sessions; Kafka's
# default 1 MB message limit would make its changelog record undeliverable.
STATE_MAX_BYTES = 16 * 1024 * 1024


def state_table(app: Any, name: str, config: EngramConfig) -> Any:
    """A per-key working-state table co-partitioned with the input topics.

    Keys are strings and values JSON-able dicts; no key/value *type* is given, because Faust would
    then treat ``dict`` as a model class when it recovers the changelog. Untyped, both are JSON.
    """
    return app.Table(
        name,
        default=None,
        partitions=config.partitions,
        extra_topic_configs={"max.message.bytes": str(STATE_MAX_BYTES)},
    )


def context_service(
    config: EngramConfig,
    codecs: TopicCodecs,
    trace: TraceBuilder,
    producer: EventProducer,
    metrics: EngramMetrics,
    slb_table: Any,
) -> ContextService:
    """The compile path over an in-process view, rebuilt from the event log's engram.memory first."""
    view = MemoryView(embedder=trace.embedder, token_counter=trace.token_counter)
    applied = AppliedOffsets()  # seeded by the log: the memory follower resumes after it
    view.apply(applied.admit(logged_memory(config, codecs)))
    slb = LookasideTable(SLB_DEFAULT)
    store = graph_expander(config)
    compiler = ContextCompiler(
        view, trace.embedder, trace.token_counter, BALANCED, router=context_router(config), slb=slb, store=store
    )
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
        applied=applied,
    )


def logged_memory(config: EngramConfig, codecs: TopicCodecs) -> list[OffsetEvent]:
    """Every MemoryEvent the local event log holds with its (partition, offset), per partition in
    offset order."""
    reader = EventLogReader(config.eventlog_dir)
    if config.topics.memory not in reader.topics():
        return []
    return [
        (event["partition"], event["offset"], codecs.memory.decode(event["value"] or b""))
        for event in reader.read([config.topics.memory])
    ]


def create_app(config: EngramConfig, metrics: EngramMetrics | None = None) -> EngramApp:
    if config.standin:
        from infra.standins import use_standin_fetch_wait

        use_standin_fetch_wait()
    app = faust.App(config.app_id, **faust_settings(config))
    topics = declare_topics(app, config)
    metrics = metrics or EngramMetrics()
    codecs = TopicCodecs.for_config(config)
    names = config.topics
    inputs = {
        names.turns: (codecs.turns, "ConversationTurn"),
        names.code: (codecs.code, "CodeChange"),
        names.requests: (codecs.requests, "ContextRequest"),
    }
    eventlog = EventLogSink(config.eventlog_dir)
    eventlog.setup()
    archiver = Archiver(eventlog, inputs, metrics)
    # Each agent that must see every record reads back offsets Faust never delivered (streams/gaps.py).
    gaps = partial(gap_repair, config.bootstrap_servers, config.app_id, metrics)
    register_archive_agent(
        app, topics.archived, archiver, config.batch_max, config.batch_within_s, gaps=gaps("engram.archive")
    )

    producer = EventProducer(config.bootstrap_servers, extra=event_producer_settings(config))
    trace = TraceBuilder()
    facts = FactsStep()
    facts_table = state_table(app, "facts-state", config)
    steps: dict[str, list[tuple[KeyedProcessor, Any]]] = {
        names.turns: [(TraceStep(trace), state_table(app, "trace-state", config)), (facts, facts_table)],
        names.code: [(CodeGraphStep(trace.token_counter), state_table(app, "code-state", config))],
    }
    for topic, name in ((topics.turns, names.turns), (topics.code, names.code)):
        codec, schema_name = inputs[name]
        ingestor = Ingestor(
            schema_name, codec, steps[name], producer, names.memory, names.deadletter, metrics,
            memory_codec=codecs.memory, deadletter_codec=codecs.deadletter,
        )  # fmt: skip
        agent = f"engram.ingest.{schema_name}"
        register_ingest_agent(
            app, topic, agent, ingestor, name, config.batch_max, config.batch_within_s, gaps=gaps(agent)
        )

    # The compile path has its own producer: its per-batch flush then waits only for its own
    # replies, not for an ingest's derived events, and linger 0 sends a reply at once.
    compile_producer = EventProducer(config.bootstrap_servers, linger_ms=0, extra=reply_producer_settings(config))
    slb_table = state_table(app, "slb-state", config)
    service = context_service(config, codecs, trace, compile_producer, metrics, slb_table)
    service.facts_block = FactsReader(facts_table, service.view, facts)
    service.catch_up = view_catch_up(config, metrics)
    applier = StoreApplier(
        open_stores(config), producer, names.deadletter, metrics, observers=[service.observe],
        codec=codecs.memory, deadletter_codec=codecs.deadletter,
    )  # fmt: skip
    register_store_agent(
        app, topics.memory, applier, config.batch_max, config.batch_within_s, gaps=gaps("engram.stores")
    )
    register_compile_agent(
        app, topics.requests, names.requests, service, request_fetcher(config), gaps=gaps("engram.compile"),
        follower=(memory_follower(config), config.partitions),
    )  # fmt: skip

    @app.page("/metrics")
    async def metrics_page(web: Any, request: Any) -> Any:
        return web.bytes(metrics.exposition(), content_type=EXPOSITION_CONTENT_TYPE)

    return EngramApp(app, config, topics, metrics, eventlog)
