"""Ingest agents: input topics → admitted records → keyed processors → engram.memory.

A batch is admitted once (decoded and validated, `streams.edge.Admission`); what is rejected
becomes a dead letter with the reason, source offset and raw bytes, and the agent goes on. The
logic is in `KeyedProcessor`s (pure processors/ code behind a small adapter, streams/steps.py):
each gets one key's records of a batch, in order, and that key's state from its table. The batch
then commits in the one order (streams/commit.py): the accepted inputs into the event log, the
derived events and dead letters delivered, the new states written at each key's source partition.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from engram.processors.intake import Rejected
from engram.processors.trust.authorize import Gate
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import MemoryEvent
from engram.streams.agents.authorized import authorize_writes
from engram.streams.agents.relationships import Loaded
from engram.streams.codecs import Codec
from engram.streams.commit import Batch, CommitTargets, JsonState, Output, StateTable, TableWrite, commit_batch
from engram.streams.edge import Admission, Admitted
from engram.streams.metrics import EngramMetrics, cpu_of, cpu_timed
from engram.streams.pacing import MemoryPace
from engram.streams.priority import ReadPriority

logger = logging.getLogger(__name__)

KeyedRecords = list[Record[Any]]


@dataclass(frozen=True, slots=True)
class StateWrite:
    """Set (or, with None, delete) one table key. ``group`` is the batch key whose source
    partition the changelog record goes to, so table and input stay co-partitioned."""

    group: str
    key: str
    state: JsonState | None


def apply_writes(table: dict[str, JsonState], writes: Sequence[StateWrite]) -> None:
    """A step's writes applied to a table held as a dict (an in-process run of the steps)."""
    for write in writes:
        if write.state is None:
            table.pop(write.key, None)
        else:
            table[write.key] = write.state


class KeyedProcessor(Protocol):
    """One processing step over a batch, grouped by key. Pure apart from the state it reads.

    ``process`` gets each key's records in arrival order and a read-only view of the step's table
    (empty when the step keeps no state). It returns the table writes and the derived events.
    Keys are independent, so processing them together (one embedding call per batch) changes no
    result.
    """

    name: str

    def key_of(self, record: Record[Any]) -> str: ...

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]: ...


Step = tuple[KeyedProcessor, StateTable | None]


def group_by_key(processor: KeyedProcessor, records: Sequence[Record[Any]]) -> dict[str, KeyedRecords]:
    """Records per key, each list in arrival (offset) order; keys in first-seen order."""
    groups: dict[str, KeyedRecords] = {}
    for record in records:
        groups.setdefault(processor.key_of(record), []).append(record)
    return groups


def run_isolated(
    processor: KeyedProcessor,
    states: Mapping[str, JsonState],
    groups: dict[str, KeyedRecords],
    failed: list[tuple[KeyedRecords, Exception]],
) -> tuple[list[StateWrite], list[MemoryEvent]]:
    """Run a step on the whole batch; if it fails, run it key by key, and report the keys that
    still fail in ``failed``, so one bad input never stops the pipeline and nothing else is lost."""
    try:
        return processor.process(states, groups)
    except Exception:  # isolated below; each failure is dead-lettered with its reason
        logger.exception("%s failed on a batch of %d keys; retrying key by key", processor.name, len(groups))
    writes: list[StateWrite] = []
    derived: list[MemoryEvent] = []
    for key, records in groups.items():
        try:
            key_writes, key_events = processor.process(states, {key: records})
        except Exception as exc:  # dead-lettered with the reason
            failed.append((records, exc))
            continue
        writes.extend(key_writes)
        derived.extend(key_events)
    return writes, derived


def in_input_order(events: Sequence[MemoryEvent], inputs: Sequence[Record[Any]]) -> list[MemoryEvent]:
    """The derived events of a batch with the keys interleaved as their inputs were: each key's
    events in the order its step emitted them, placed at the latest input of the batch they (or
    the key's events before them) cite. A step runs key by key, so it emits one key's events
    after another's; but a partition of engram.memory keeps stream time (the dream schedule,
    processors/dreaming/schedule.py), and a later turn of one user written before an earlier turn
    of another would move it on early, by as much as the batch happened to hold. An input is cited
    by its position, or by what it cites itself (a fact decided from a turn's event node cites the
    turn, as the node does). Events citing no input of the batch keep the step's order."""
    position: dict[tuple[str, int, int], int] = {}
    for i, record in enumerate(inputs):
        position.setdefault((record.topic, record.partition, record.offset), i)
        cites = record.value.get("sources", ()) if isinstance(record.value, dict) else ()
        for source in cites:
            position.setdefault((source["topic"], source["partition"], source["offset"]), i)
    per_key: dict[str, list[tuple[int, MemoryEvent]]] = {}
    for event in events:
        sequence = per_key.setdefault(event["key"], [])
        at = sequence[-1][0] if sequence else -1  # never before the key's previous event
        for source in event["sources"]:
            at = max(at, position.get((source["topic"], source["partition"], source["offset"]), -1))
        sequence.append((at, event))
    merged: Iterator[tuple[int, MemoryEvent]] = heapq.merge(*per_key.values(), key=lambda item: item[0])
    return [event for _, event in merged]


@dataclass(frozen=True, slots=True)
class MemoryOutputs:
    """Encodes derived MemoryEvents for engram.memory (keyed by their key) and counts them."""

    topic: str
    codec: Codec
    metrics: EngramMetrics

    def __call__(self, events: Sequence[MemoryEvent]) -> list[Output]:
        with cpu_of(self.metrics.stage_cpu, "encode"):
            encode = self.codec.encode
            for event in events:
                self.metrics.count_memory_event(event)
            return [Output(self.topic, e["key"].encode(), encode(e)) for e in events]


@dataclass(frozen=True)
class KeyedSteps:
    """Runs keyed processors over admitted records: their writes and derived events, with the
    records a step failed on dead-lettered (stage = the step's name)."""

    steps: Sequence[Step]
    admission: Admission[Any]
    outputs: MemoryOutputs
    reads: ReadPriority | None = None  # reads first: each step's batch waits while requests do

    async def run(self, admitted: Admitted[Any], records: Sequence[Record[Any]], batch: Batch) -> list[MemoryEvent]:
        """Run every step; their derived events (also added to the batch's outputs) are returned."""
        every: list[MemoryEvent] = []
        for processor, table in self.steps:
            if self.reads is not None:
                await self.reads.writes_turn()
            groups = group_by_key(processor, records)
            states: Mapping[str, JsonState] = table if table is not None else {}
            failed: list[tuple[KeyedRecords, Exception]] = []
            # The pure step runs off the loop (it embeds, parses, runs rules) and only reads the
            # table, which no other agent writes; table writes and changelogs stay on the loop.
            cpu = self.outputs.metrics.stage_cpu
            writes, derived = await asyncio.to_thread(
                cpu_timed, cpu, processor.name, run_isolated, processor, states, groups, failed
            )
            if table is not None:
                batch.writes.extend(TableWrite(table, groups[w.group][0].partition, w.key, w.state) for w in writes)
            derived = in_input_order(derived, records)
            batch.outputs.extend(self.outputs(derived))
            every.extend(derived)
            for bad, exc in failed:
                verdict = Rejected(
                    "processing", f"{processor.name} failed: {type(exc).__name__}: {exc}", type(exc).__name__
                )
                batch.outputs.extend(
                    self.admission.dead_letter(r, verdict, processor.name) for r in admitted.raw_of(bad)
                )
        return every


@dataclass(frozen=True)
class WriteCheck:
    """Who may write what (the worker's gate, once its relationship tuples have ``loaded``), and
    the codec that re-encodes an input without its token for the event log."""

    gate: Gate
    codec: Codec
    loaded: Loaded

    async def __call__(self, admission: Admission[Any], admitted: Admitted[Any]) -> None:
        await self.loaded.wait()
        authorize_writes(self.gate, admission, admitted, self.codec)


@dataclass(frozen=True)
class Ingestor:
    """One input topic's ingest: admit once, check the producer may write each input (when the
    worker has a token gate), run the keyed processors, and say what to commit."""

    admission: Admission[Any]
    steps: KeyedSteps
    metrics: EngramMetrics
    writes: WriteCheck | None = None
    pace: MemoryPace | None = None  # backpressure: pauses the inputs while the memory agent is behind

    async def stage(self, records: Sequence[RawRecord]) -> Batch:
        admitted = self.admission.admit(records)
        if self.writes is not None:
            await self.writes(self.admission, admitted)
        # The log keeps only valid inputs, so a replay republishes exactly what was accepted;
        # rejected inputs reach the log through the dead-letter topic.
        batch = Batch(archive=admitted.raw_of(admitted.accepted), outputs=list(admitted.dead))
        await self.steps.run(admitted, admitted.accepted, batch)
        return batch

    async def ingest(self, records: Sequence[RawRecord], targets: CommitTargets) -> None:
        batch = await self.stage(records)
        await commit_batch(batch, targets)
        if self.pace is not None:
            self.pace.steer()  # what the batch derived is written: the backlog may be past its bound
        # Counted once the batch committed: a scrape showing N means N are fully ingested.
        if records:
            self.metrics.ingest_messages.labels(records[0].topic).inc(len(batch.archive))
