"""The one commit order, written once (STYLE.md example 3). Every agent commits through it.

An agent turns a batch of records into a `Batch`: what the batch makes durable. `commit_batch`
then makes it durable in this order, each stage only after the one before it succeeded:

1. **Event log durable.** The batch's archived records are appended and fsynced; the
   per-partition checkpoint (durable byte length + last offset) is replaced atomically.
2. **Stores applied.** The vector and graph sinks apply the batch's memory events (idempotent
   upserts by deterministic id), then the in-process observers (the compile path's view) see them.
3. **Derived events delivered.** MemoryEvents, dead letters and compiled contexts are produced,
   and the producer is flushed: the broker acknowledged every one. An agent may send outputs
   before its commit, as the request path sends each reply the moment it is compiled; their
   delivery reports (``Batch.in_flight``) are awaited here with the rest, and a failed one fails
   this stage.
4. **State written.** Table writes are applied and their changelog records delivered.
5. **Offsets committed.** The batch is acknowledged only now: the ``acknowledge`` step commits
   offsets where an agent commits its own (the request path's reader); a Faust agent's batch is
   acknowledged when `commit_batch` has returned, because ``Stream.take_events`` acknowledges a
   batch after the loop body that handled it returns, and Faust commits acknowledged offsets on
   its commit interval (an agent that raises stops the worker first, streams/repairs/unfinished.py).

A failure at any stage raises `CommitError` naming the stage, and nothing after it happens, so the
batch is read again after the restart: the event log skips offsets it already holds, sinks upsert
the same ids, derived events have the same uuid5 ids, and states are those of before the batch,
which derive the same events again. Derived events go before state, because the other order could
record inputs as seen whose events were never delivered. At-least-once transport, exactly-once
effect. tests/streams/test_commit_flow.py crashes a flow between every two stages.
"""

from __future__ import annotations

import asyncio
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from engram.schemas.record import RawRecord, Record
from engram.schemas.records import MemoryEvent
from engram.sinks.base import BatchingSink, SinkRetriesExhaustedError
from engram.streams.metrics import EngramMetrics, cpu_of, cpu_timed

JsonState = dict[str, Any]
logger = logging.getLogger(__name__)


class CommitError(RuntimeError):
    """A stage of the commit order failed; later stages did not run and nothing is acknowledged."""

    def __init__(self, stage: str, cause: BaseException) -> None:
        super().__init__(f"commit stage {stage!r} failed: {type(cause).__name__}: {cause}")
        self.stage = stage


@dataclass(frozen=True, slots=True)
class Output:
    """One record a batch produces: a MemoryEvent, a dead letter or a compiled context."""

    topic: str
    key: bytes | None
    value: bytes


class OutputProducer(Protocol):
    """What stage 3 needs of a producer: send, then a flush that raises unless all were delivered."""

    def send(self, topic: str, key: bytes | None, value: bytes) -> None: ...

    async def flush(self) -> None: ...


class StateTable(Mapping[str, JsonState], ABC):
    """A per-key working-state table: read as a mapping, written with the partition its changelog
    record goes to (the source partition, so that table and input stay co-partitioned)."""

    @abstractmethod
    def write(self, partition: int, key: str, state: JsonState | None) -> None:
        """Set (or, with None, delete) ``key`` and send its changelog record to ``partition``."""

    async def flush(self) -> None:
        """Return once the changelog records of the writes so far are durable (at once, unless a
        table sends them through a producer)."""
        return


class MemoryTable(StateTable):
    """A state table held in this process alone, no changelog: what a restarted worker would read
    back, for benches and tests that run a worker's steps in process."""

    def __init__(self) -> None:
        self.data: dict[str, JsonState] = {}

    def __getitem__(self, key: str) -> JsonState:
        return self.data[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)

    def write(self, partition: int, key: str, state: JsonState | None) -> None:
        if state is None:
            self.data.pop(key, None)
        else:
            self.data[key] = state


@dataclass(frozen=True, slots=True)
class TableWrite:
    """Set (or, with None, delete) one key of a table; the changelog record goes to ``partition``."""

    table: StateTable
    partition: int
    key: str
    state: JsonState | None


Observer = Callable[[Sequence[Record[MemoryEvent]]], Awaitable[None]]


@dataclass
class Batch:
    """What one batch makes durable, by stage. An agent fills it; `commit_batch` applies it."""

    archive: list[RawRecord] = field(default_factory=list)
    stored: list[Record[MemoryEvent]] = field(default_factory=list)
    outputs: list[Output] = field(default_factory=list)
    in_flight: list[asyncio.Future[bool]] = field(default_factory=list)  # sent earlier: delivered?
    writes: list[TableWrite] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class OutagePolicy:
    """How long a store may be down before the worker gives up on it (seconds).

    While a store's sink exhausts its own retries, stage 2 keeps the batch and tries the flush
    again with backoff (an ``asyncio.sleep``: the loop goes on, the compile path answers from the
    view and names the missing store in ``fallbacks``); the agent takes no new batch meanwhile, so
    its partitions are not read further and the broker keeps the backlog. Past ``limit_s`` the
    stage fails and the worker stops unacknowledged: the backlog must not outlive the topic's
    retention while nothing alerts (the orchestrator restarts the worker; the alert
    EngramWorkerNotReady or EngramSinkRetries has fired by then)."""

    limit_s: float = 600.0
    backoff_initial_s: float = 0.5
    backoff_max_s: float = 15.0


@dataclass
class CommitTargets:
    """Where an agent's batches go. An agent leaves out the stages it has nothing for.

    The sinks are the agent's own: a sink buffers what it is given until its flush, off the loop,
    so two agents sharing one would flush (or lose) each other's records. Each topic's event-log
    segments are written by the one agent that reads that topic.
    """

    eventlog: BatchingSink[bytes | None] | None = None
    stores: Sequence[tuple[str, BatchingSink[MemoryEvent]]] = ()
    observers: Sequence[Observer] = ()
    producer: OutputProducer | None = None
    metrics: EngramMetrics | None = None
    outage: OutagePolicy = field(default_factory=OutagePolicy)


async def commit_batch(
    batch: Batch, targets: CommitTargets, acknowledge: Callable[[], Awaitable[None]] | None = None
) -> dict[str, float]:
    """Make ``batch`` durable in the commit order, then ``acknowledge`` it; return the seconds
    each stage took (a stage per store, named ``store:<name>``). Blocking flushes run off the loop."""
    timings: dict[str, float] = {}
    if batch.archive and targets.eventlog is not None:
        await _stage("eventlog", timings, _archive(targets.eventlog, batch.archive, targets))
        _count_archived(targets.metrics, batch.archive, timings["eventlog"])
    if batch.stored:
        for name, sink in targets.stores:
            retried = sink.retries
            await _stage(f"store:{name}", timings, _store(sink, batch.stored, name, targets), label="stores")
            _count_stored(targets.metrics, name, len(batch.stored), timings[f"store:{name}"], sink.retries - retried)
        for observe in targets.observers:
            await _stage("observers", timings, observe(batch.stored), label="stores")
    if batch.outputs:
        if targets.producer is None:
            msg = f"a batch with {len(batch.outputs)} outputs and no producer to deliver them (a wiring bug)"
            raise ValueError(msg)
        await _stage("produce", timings, _produce(targets.producer, batch.outputs, targets.metrics))
    if batch.in_flight:
        await _stage("produce", timings, _delivered(batch.in_flight))
    if batch.writes:
        await _stage("state", timings, _write_states(batch.writes, targets.metrics))
    if acknowledge is not None:
        await _stage("offsets", timings, acknowledge())
    if targets.metrics is not None:
        for stage, seconds in timings.items():
            targets.metrics.commit_stage.labels(stage).inc(seconds)
    return timings


async def _stage(name: str, timings: dict[str, float], work: Awaitable[None], label: str | None = None) -> None:
    started = time.perf_counter()
    try:
        await work
    except CommitError:
        raise
    except Exception as exc:
        raise CommitError(label or name, exc) from exc
    timings[name] = timings.get(name, 0.0) + time.perf_counter() - started  # observers share one name


def _count_archived(metrics: EngramMetrics | None, records: Sequence[RawRecord], seconds: float) -> None:
    if metrics is None:
        return
    metrics.eventlog_flush.observe(seconds)
    for record in records:
        metrics.eventlog_records.labels(record.topic).inc()
        metrics.eventlog_bytes.inc(len(record.value or b""))


def _count_stored(metrics: EngramMetrics | None, sink: str, count: int, seconds: float, retries: int) -> None:
    if metrics is not None:
        metrics.sink_batch.labels(sink).observe(seconds)
        metrics.sink_applied.labels(sink).inc(count)
        if retries:
            metrics.sink_retries.labels(sink).inc(retries)


async def _archive(eventlog: BatchingSink[bytes | None], records: Sequence[RawRecord], targets: CommitTargets) -> None:
    """Make the batch durable in the event log, riding out a full disk (writes failing with
    ENOSPC) as a store outage is ridden out: nothing is acknowledged meanwhile, so ingest takes no
    new batch and the broker keeps the backlog; a failed append is rolled back to the partition's
    last checkpoint (sinks/eventlog/segment.py), and its retry skips what was made durable."""
    for record in records:
        eventlog.add(record)
    await _flush_riding_out(eventlog, "eventlog", targets)


async def _store(
    sink: BatchingSink[MemoryEvent], records: Sequence[Record[MemoryEvent]], name: str, targets: CommitTargets
) -> None:
    """Apply the batch to one store, riding out an outage up to `OutagePolicy.limit_s`. A failed
    flush keeps what it could not write buffered, and the sink's upserts are idempotent, so trying
    the same flush again applies every event exactly once."""
    for record in records:
        sink.add(record)
    await _flush_riding_out(sink, name, targets)


async def _flush_riding_out(sink: BatchingSink[Any], name: str, targets: CommitTargets) -> None:
    """``sink.flush`` off the loop, again with backoff while it exhausts its own retries, until it
    succeeds or the outage passes `OutagePolicy.limit_s`; ``engram_store_up{name}`` says which."""
    policy, metrics = targets.outage, targets.metrics
    started, delay = time.monotonic(), policy.backoff_initial_s
    while True:
        cpu, pooled = metrics.stage_cpu if metrics is not None else None, sink.pool_cpu_s
        try:
            await asyncio.to_thread(cpu_timed, cpu, f"sink:{name}", sink.flush)
        except SinkRetriesExhaustedError as exc:
            down_s = time.monotonic() - started
            if down_s + delay > policy.limit_s or not sink.rides_out():
                raise
            if metrics is not None:
                metrics.store_up.labels(name).set(0)
            logger.warning("store %s down for %.1fs, retrying in %.1fs: %s", name, down_s, delay, exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, policy.backoff_max_s)
            continue
        finally:
            if cpu is not None:  # the flush's work on the sink's own threads, which cpu_timed does not see
                cpu.labels(f"sink:{name}").inc(sink.pool_cpu_s - pooled)
        if metrics is not None:
            metrics.store_up.labels(name).set(1)
        return


async def _produce(producer: OutputProducer, outputs: Sequence[Output], metrics: EngramMetrics | None) -> None:
    with cpu_of(metrics.stage_cpu if metrics is not None else None, "produce"):
        for output in outputs:
            producer.send(output.topic, output.key, output.value)
    await producer.flush()


class UndeliveredError(RuntimeError):
    """Records sent before the commit were not acknowledged by the broker."""


async def _delivered(in_flight: Sequence[asyncio.Future[bool]]) -> None:
    results = await asyncio.gather(*in_flight)
    failed = sum(1 for delivered in results if not delivered)
    if failed:
        msg = f"{failed} of {len(results)} records sent before the commit were not delivered"
        raise UndeliveredError(msg)


async def _write_states(writes: Sequence[TableWrite], metrics: EngramMetrics | None) -> None:
    # On the loop: Faust tables are not thread-safe, and a write only queues its changelog record.
    with cpu_of(metrics.stage_cpu if metrics is not None else None, "state"):
        for write in writes:
            write.table.write(write.partition, write.key, write.state)
    for table in {id(write.table): write.table for write in writes}.values():
        await table.flush()
