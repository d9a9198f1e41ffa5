"""An in-process flow harness: a list source with crash markers, list sinks, no broker.

Modelled on bytewax's ``TestingSource`` with ``ABORT``: the input is a list of records with
`CrashAt` markers among them. A batch that holds a marker (not fired yet) fails at the marker's
stage of the commit order: the target of that stage raises, after it has applied half the batch
when the marker says ``partial``. The worker then "restarts": every in-memory object is rebuilt
from what is durable (the event-log folder, the store, the broker's delivered records, the table
changelogs, the committed position), and the source is read again from the committed position,
as Kafka redelivers an unacknowledged batch. Each marker fires once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from engram.schemas.record import RawRecord
from engram.sinks.base import BatchingSink, SinkBatch, SinkConfig
from engram.sinks.eventlog.reader import EventLogReader
from engram.sinks.eventlog.sink import EventLogSink
from engram.streams.commit import CommitError, CommitTargets, JsonState, MemoryTable

T = TypeVar("T")


class InjectedCrash(RuntimeError):
    """The failure a crash marker injects."""


@dataclass(frozen=True, slots=True)
class CrashAt:
    """Crash the batch holding this marker at ``stage`` ("eventlog", "stores", "produce" or
    "state"); with ``partial``, the stage's target applies half the batch first."""

    stage: str
    partial: bool = False


@dataclass
class Armed:
    """The failure armed for the current batch, if any, shared by the failing targets. Each target
    calls `hit` before it applies an item; the armed crash fires there at its stage, before the
    first item, or before the second when partial."""

    crash: CrashAt | None = None
    applied: dict[str, int] = field(default_factory=dict)

    def arm(self, crash: CrashAt | None) -> None:
        self.crash, self.applied = crash, {}

    def hit(self, stage: str) -> None:
        done = self.applied.get(stage, 0)
        self.applied[stage] = done + 1
        crash = self.crash
        if crash is not None and crash.stage == stage and done == (1 if crash.partial else 0):
            self.crash = None
            msg = f"injected crash at {stage} after {done} items"
            raise InjectedCrash(msg)


class ListStore(BatchingSink[Any]):
    """An idempotent store over a durable dict (upsert by ``key_of(value)``), that fails as armed."""

    def __init__(self, rows: dict[str, Any], armed: Armed, key_of: Callable[[Any], str]) -> None:
        super().__init__(SinkConfig(max_retries=0))
        self.rows, self.armed, self.key_of = rows, armed, key_of

    def write(self, batch: SinkBatch[Any]) -> None:
        for item in batch:
            self.armed.hit("stores")
            self.rows[self.key_of(item.value)] = item.value


class FailingEventLog(EventLogSink):
    """The real event log, failing as armed (before anything of the batch is durable)."""

    def __init__(self, root: Path, armed: Armed) -> None:
        super().__init__(root)
        self.armed = armed

    def flush(self) -> dict[tuple[str, int], int]:
        self.armed.hit("eventlog")
        return super().flush()


@dataclass
class ListProducer:
    """Delivers to a durable list (the broker); a flush fails as armed, after delivering half."""

    delivered: list[tuple[str, bytes | None, bytes]]
    armed: Armed
    pending: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)

    def send(self, topic: str, key: bytes | None, value: bytes) -> None:
        self.pending.append((topic, key, value))

    async def flush(self) -> None:
        pending, self.pending = self.pending, []
        for record in pending:
            self.armed.hit("produce")
            self.delivered.append(record)


class ListTable(MemoryTable):
    """A table rebuilt from its durable changelog at each start; a write fails as armed."""

    def __init__(self, changelog: list[tuple[int, str, JsonState | None]], armed: Armed) -> None:
        super().__init__()
        self.changelog, self.armed = changelog, armed
        for partition, key, state in changelog:
            super().write(partition, key, state)

    def write(self, partition: int, key: str, state: JsonState | None) -> None:
        self.armed.hit("state")
        super().write(partition, key, state)
        self.changelog.append((partition, key, state))


@dataclass
class Durable(Generic[T]):
    """What survives a crash: the event-log folder, store rows, delivered records, changelogs and
    the committed position of the source."""

    eventlog_dir: Path
    rows: dict[str, Any] = field(default_factory=dict)
    delivered: list[tuple[str, bytes | None, bytes]] = field(default_factory=list)
    changelogs: dict[str, list[tuple[int, str, JsonState | None]]] = field(default_factory=dict)
    committed: int = 0

    def logged(self) -> list[tuple[str, int, int, bytes | None]]:
        if not self.eventlog_dir.exists():
            return []
        reader = EventLogReader(self.eventlog_dir)
        return [(e["topic"], e["partition"], e["offset"], e["value"]) for e in reader.read(reader.topics())]


@dataclass
class Worker:
    """One life of the worker: its commit targets and tables, and the batch handler under test."""

    armed: Armed
    targets: CommitTargets
    tables: dict[str, ListTable]
    handle: Callable[[Sequence[RawRecord], CommitTargets], Any]

    def close(self) -> None:
        if isinstance(self.targets.eventlog, EventLogSink):
            self.targets.eventlog.close()


@dataclass
class FlowRun:
    durable: Durable[Any]
    crashes: list[str]  # the stage of each CommitError, in order
    starts: int


def run_flow(
    inputs: Sequence[RawRecord | CrashAt],
    start: Callable[[Durable[Any], Armed], Worker],
    durable: Durable[Any],
    batch_size: int,
) -> FlowRun:
    """Run ``inputs`` in batches of ``batch_size`` records through workers made by ``start``,
    restarting after each crash from what is durable, until every record is committed."""
    records: list[RawRecord] = []
    markers: dict[int, list[CrashAt]] = {}  # position of the record after the marker -> markers
    for item in inputs:
        if isinstance(item, CrashAt):
            markers.setdefault(len(records), []).append(item)
        else:
            records.append(item)
    crashes: list[str] = []
    starts = 0
    while durable.committed < len(records):
        armed = Armed()
        worker = start(durable, armed)
        starts += 1
        try:
            while durable.committed < len(records):
                end = min(durable.committed + batch_size, len(records))
                due = [p for p in sorted(markers) if durable.committed <= p < end]
                armed.arm(markers[due[0]].pop(0) if due else None)
                if due and not markers[due[0]]:
                    del markers[due[0]]
                asyncio.run(worker.handle(records[durable.committed : end], worker.targets))
                durable.committed = end  # step 5: acknowledged once the commit returned
        except CommitError as exc:
            crashes.append(exc.stage)
        finally:
            worker.close()
    return FlowRun(durable, crashes, starts)
