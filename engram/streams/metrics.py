"""Prometheus metrics of a worker, on its own registry (no global state, no import-time setup).

Names follow Prometheus conventions (`_total` counters, `_seconds` histograms) and every label has
a small, bounded set of values: topic names, route names, decision kinds, sink names and a fixed
set of dead-letter reason classes — never ids or free text.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from engram.processors.dreaming.report import DreamReport
from engram.processors.facts.reconciler import ENGINE_ERROR_RULE
from engram.schemas.changes import change_as, kind_of
from engram.schemas.records import FactDecided, MemoryEvent, NodeRemoved, NodeUpserted
from engram.streams.heap import GENERATIONS, gc_clock

T = TypeVar("T")
LATENCY_BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0)


@contextmanager
def cpu_of(counter: Counter | None, stage: str) -> Iterator[None]:
    """Count the CPU time the current thread spends in the block under ``stage``: for synchronous
    sections only (an ``await`` inside would count other coroutines' work on the loop thread)."""
    if counter is None:
        yield
        return
    started = time.thread_time()
    try:
        yield
    finally:
        counter.labels(stage).inc(time.thread_time() - started)


def cpu_timed(counter: Counter | None, stage: str, work: Callable[..., T], *args: Any) -> T:
    """``work(*args)`` under `cpu_of` (to hand to ``asyncio.to_thread``: counted on that thread)."""
    with cpu_of(counter, stage):
        return work(*args)


@dataclass
class EngramMetrics:
    registry: CollectorRegistry = field(default_factory=lambda: CollectorRegistry(auto_describe=True))

    def __post_init__(self) -> None:
        r = self.registry
        self.ingest_messages = Counter(
            "engram_ingest_messages", "Input messages decoded and accepted", ["topic"], registry=r
        )
        self.received = Counter(
            "engram_received_messages", "Messages an agent received (each once per worker)", ["topic"], registry=r
        )
        self.decodes = Counter(
            "engram_decoded_messages", "Avro decodes of received messages (one per message)", ["topic"], registry=r
        )
        self.deadletters = Counter(
            "engram_deadletter_messages", "Messages sent to the dead-letter topic", ["topic", "reason"], registry=r
        )
        self.eventlog_records = Counter(
            "engram_eventlog_records", "Records made durable in the event log", ["topic"], registry=r
        )
        self.eventlog_bytes = Counter("engram_eventlog_bytes", "Value bytes made durable in the event log", registry=r)
        self.eventlog_flush = Histogram(
            "engram_eventlog_flush_seconds", "Event-log batch append + fsync time", buckets=LATENCY_BUCKETS, registry=r
        )
        self.memory_events = Counter(
            "engram_memory_events", "MemoryEvents produced to engram.memory", ["kind"], registry=r
        )
        self.sink_applied = Counter("engram_sink_applied", "MemoryEvents applied by a sink", ["sink"], registry=r)
        self.sink_batch = Histogram(
            "engram_sink_batch_seconds", "Sink batch write time", ["sink"], buckets=LATENCY_BUCKETS, registry=r
        )
        self.sink_retries = Counter("engram_sink_retries", "Sink batch retries", ["sink"], registry=r)
        self.erasures = Counter("engram_erasures", "Users erased (engram forget)", registry=r)
        self.stage_cpu = Counter(
            "engram_stage_cpu_seconds",
            "CPU seconds spent in a pipeline stage (its own thread's time)",
            ["stage"],
            registry=r,
        )
        self.commit_stage = Counter(
            "engram_commit_stage_seconds",
            "Wall seconds batches spent in each stage of the commit order (waiting included)",
            ["stage"],
            registry=r,
        )
        self.eventlog_segments = Counter(
            "engram_eventlog_segments", "Event-log segments started", ["topic"], registry=r
        )
        self.authorization_denials = Counter(
            "engram_authorization_denials", "Inputs and requests the token gate refused", ["path"], registry=r
        )
        for path in ("ingest", "compile", "graph", "erasure", "facts"):  # zero series from the start: rate() sees them
            self.authorization_denials.labels(path)
        self.budget_use = Histogram(
            "engram_context_budget_use", "Compiled tokens over the request's token budget", registry=r,
            buckets=(0.1, 0.25, 0.5, 0.75, 0.9, 1.0),
        )  # fmt: skip
        self.context_requests = Counter("engram_context_requests", "Context requests compiled", ["route"], registry=r)
        self.compile_seconds = Histogram(
            "engram_compile_seconds", "Request to compiled context time", buckets=LATENCY_BUCKETS, registry=r
        )
        self.slb_lookups = Counter("engram_slb_lookups", "SLB lookups", ["result"], registry=r)
        self.fact_decisions = Counter("engram_facts_decisions", "Fact decisions", ["decision"], registry=r)
        self.facts_kept_on_error = Counter(
            "engram_facts_kept_on_engine_error",
            "Candidate facts kept short-term because the rule engine failed",
            registry=r,
        )
        self.code_entities = Counter("engram_code_entities", "Code entity changes", ["op"], registry=r)
        self.offset_gaps = Counter(
            "engram_offset_gaps", "Offset ranges an agent never received, read back", ["topic", "agent"], registry=r
        )
        self.view_followed = Counter(
            "engram_view_followed",
            "MemoryEvents of partitions other workers own applied to this worker's view",
            registry=r,
        )
        self.view_followed_partitions = Gauge(
            "engram_view_followed_partitions", "engram.memory partitions this worker's view follows", registry=r
        )
        self.view_snapshots = Counter(
            "engram_view_snapshots", "Snapshots of the view written for restarts (sinks/viewstate.py)", registry=r
        )
        self.view_snapshot_seconds = Counter(
            "engram_view_snapshot_seconds", "Wall seconds the view's snapshots took to write (forked children)",
            registry=r,
        )  # fmt: skip
        self.view_snapshot_bytes = Gauge("engram_view_snapshot_bytes", "Size of the newest view snapshot", registry=r)
        self.view_start_events = Gauge(
            "engram_view_start_events", "Memory events the view started with, by source (snapshot, log)", ["source"],
            registry=r,
        )  # fmt: skip
        self.malloc_trim_seconds = Counter(
            "engram_malloc_trim_seconds", "Seconds spent giving freed memory back to the OS (streams/trim.py)",
            registry=r,
        )  # fmt: skip
        self.state_recovered = Counter(
            "engram_state_recovered_records", "Changelog records a state table read back at a start or rebalance",
            ["table"], registry=r,
        )  # fmt: skip
        self.state_disk_reads = Counter(
            "engram_state_disk_reads", "State reads a table on disk answered from RocksDB, past its cache", ["table"],
            registry=r,
        )  # fmt: skip
        self.assigned_partitions = Gauge(
            "engram_assigned_partitions", "Partitions of a topic assigned to this worker", ["topic"], registry=r
        )
        self.dreams = Counter("engram_dreams", "Dreams run, by trigger (idle session, window)", ["trigger"], registry=r)
        self.dreams_failed = Counter(
            "engram_dreams_failed", "Dreams skipped because they would break a pruning invariant", registry=r
        )
        self.dream_nodes = Counter(
            "engram_dream_nodes", "Consolidated nodes dreams made, by kind (gist, rule, profile)", ["kind"], registry=r
        )
        self.dream_rejections = Counter(
            "engram_dream_rejections", "Dream candidates rejected by verification, by reason", ["reason"], registry=r
        )
        self.dormant_nodes = Counter("engram_dormant_nodes", "Episodes dreams made dormant (eq. 15)", registry=r)
        self.batch_size = Gauge("engram_agent_last_batch_size", "Size of an agent's last batch", ["agent"], registry=r)
        self.store_up = Gauge("engram_store_up", "1 while its last flush succeeded, else 0", ["sink"], registry=r)
        self.ready = Gauge("engram_worker_ready", "1 while the /ready checks pass, else 0", registry=r)
        self.memory_backlog = Gauge(
            "engram_memory_backlog",
            "engram.memory records written to this worker's partitions and not yet applied by it",
            registry=r,
        )
        self.paced_seconds = Counter(
            "engram_ingest_paced_seconds", "Seconds the input partitions were paused for the memory backlog", registry=r
        )
        self.write_yield_seconds = Counter(
            "engram_write_yield_seconds",
            "Seconds the write steps (trace, facts, dreams) waited for context requests to be answered",
            registry=r,
        )
        self.consumer_lag = Gauge(
            "engram_consumer_lag", "Records behind the fetch high-watermark, per partition", ["topic", "partition"],
            registry=r,
        )  # fmt: skip

        self.gc_cpu = Counter(
            "engram_gc_cpu_seconds",
            "CPU seconds the cyclic garbage collector took, by generation (inside the stages' own time)",
            ["generation"],
            registry=r,
        )
        self.gc_collections = Counter(
            "engram_gc_collections", "Cyclic garbage collections, by generation", ["generation"], registry=r
        )
        self.gc_frozen = Gauge(
            "engram_gc_frozen_objects", "Objects gc.freeze moved out of the collector's passes (streams/heap.py)",
            registry=r,
        )  # fmt: skip
        clock = gc_clock()
        self._gc_counted = (list(clock.seconds), list(clock.collections))

    def count_gc(self) -> None:
        """Bring the collector's counters up to the process's `GcClock` (from this object's creation on)."""
        clock = gc_clock()
        seconds, collections = self._gc_counted
        for g in range(GENERATIONS):
            self.gc_cpu.labels(str(g)).inc(clock.seconds[g] - seconds[g])
            self.gc_collections.labels(str(g)).inc(clock.collections[g] - collections[g])
        self._gc_counted = (list(clock.seconds), list(clock.collections))
        self.gc_frozen.set(clock.frozen)

    def count_memory_event(self, event: MemoryEvent) -> None:
        """Count a produced MemoryEvent by kind (an unknown kind too, by its record name), plus
        fact decisions and code entity changes."""
        self.memory_events.labels(kind_of(event).rsplit(".", 1)[-1]).inc()
        if (fact := change_as(event, FactDecided)) is not None:
            self.fact_decisions.labels(fact["decision"]).inc()
            if fact["rule"] == ENGINE_ERROR_RULE:
                self.facts_kept_on_error.inc()
        elif (node := change_as(event, NodeUpserted)) is not None and node["kind"].startswith("code_"):
            self.code_entities.labels("upsert").inc()
        elif (removed := change_as(event, NodeRemoved)) is not None and removed["kind"].startswith("code_"):
            self.code_entities.labels("remove").inc()

    def count_dream(self, report: DreamReport) -> None:
        self.dreams.labels(report.trigger).inc()
        for kind, n in report.nodes.items():
            self.dream_nodes.labels(kind).inc(n)
        for reason, n in report.rejected.items():
            self.dream_rejections.labels(reason).inc(n)
        self.dormant_nodes.inc(report.dormant)

    def exposition(self) -> bytes:
        """The text exposition format served on /metrics."""
        self.count_gc()
        return generate_latest(self.registry)
