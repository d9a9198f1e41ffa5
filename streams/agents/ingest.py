"""Ingest agents: input topics → admitted records → keyed processors → engram.memory.

Undecodable or invalid messages go to the dead-letter topic with the reason, source offset and raw
bytes; the agent goes on. The logic is in `KeyedProcessor`s (pure processors/ code behind a small
adapter): each gets one key's records of a batch, in order, and that key's state from a Faust
table. The new state is written to the table at the key's source partition (so changelog and
input stay co-partitioned), and the derived events are produced before the batch is acknowledged.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from processors.intake import Accepted, Rejected, admit, dead_letter
from schemas.codec import AvroCodec
from schemas.records import DeadLetter, EventRef, MemoryEvent
from streams.agents.batches import register_batch_agent
from streams.gaps import GapRepair
from streams.metrics import EngramMetrics
from streams.output import EventProducer

logger = logging.getLogger(__name__)

JsonState = dict[str, Any]
KeyedRecords = list[tuple[Any, EventRef]]


@dataclass(frozen=True, slots=True)
class StateWrite:
    """Set (or, with None, delete) one table key. ``group`` is the batch key whose source
    partition the changelog record goes to, so table and input stay co-partitioned."""

    group: str
    key: str
    state: JsonState | None


class KeyedProcessor(Protocol):
    """One processing step over a batch, grouped by key. Pure apart from the state it reads.

    ``process`` gets each key's records in arrival order and a read-only view of the step's table
    (empty when the step keeps no state). It returns the table writes and the derived events.
    Keys are independent, so processing them together (one embedding call per batch) changes no
    result.
    """

    name: str

    def key_of(self, record: Any) -> str: ...

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]: ...


@dataclass
class Admitted:
    accepted: list[tuple[Any, EventRef]] = field(default_factory=list)
    dead: list[tuple[bytes | None, DeadLetter, Rejected]] = field(default_factory=list)
    raw: dict[tuple[int, int], tuple[bytes | None, bytes | None]] = field(default_factory=dict)

    def reject_processed(self, records: KeyedRecords, stage: str, exc: Exception) -> None:
        """Dead-letter records a processing step failed on (the step's bug or a pathological input)."""
        verdict = Rejected("processing", f"{stage} failed: {type(exc).__name__}: {exc}", type(exc).__name__)
        for _, ref in records:
            key, value = self.raw[(ref["partition"], ref["offset"])]
            letter = dead_letter(verdict, ref["topic"], ref["partition"], ref["offset"], key, value, stage=stage)
            self.dead.append((key, letter, verdict))


def admit_batch(events: Sequence[Any], codec: Any, schema_name: str) -> Admitted:
    outcome = Admitted()
    for event in events:
        m = event.message
        verdict = admit(codec, schema_name, m.value)
        outcome.raw[(m.partition, m.offset)] = (m.key, m.value)
        if isinstance(verdict, Accepted):
            outcome.accepted.append((verdict.record, {"topic": m.topic, "partition": m.partition, "offset": m.offset}))
        else:
            letter = dead_letter(verdict, m.topic, m.partition, m.offset, m.key, m.value, stage="ingest")
            outcome.dead.append((m.key, letter, verdict))
    return outcome


def group_by_key(processor: KeyedProcessor, accepted: KeyedRecords) -> dict[str, KeyedRecords]:
    """Records per key, each list in arrival (offset) order; keys in first-seen order."""
    groups: dict[str, KeyedRecords] = {}
    for record, ref in accepted:
        groups.setdefault(processor.key_of(record), []).append((record, ref))
    return groups


def run_isolated(
    processor: KeyedProcessor, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords], admitted: Admitted
) -> tuple[list[StateWrite], list[MemoryEvent]]:
    """Run a step on the whole batch; if it fails, run it key by key and dead-letter the keys
    that still fail, so one bad input never stops the pipeline and nothing else is lost."""
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
            admitted.reject_processed(records, processor.name, exc)
            continue
        writes.extend(key_writes)
        derived.extend(key_events)
    return writes, derived


def write_state(table: Any, partition: int, key: str, state: JsonState | None) -> None:
    """Set (or delete) a table key and send its changelog record to the *source* partition.

    A batched agent has no single "current event", so Faust's implicit partition choice would be
    wrong for all but one key; the explicit partition keeps table and input co-partitioned.
    """
    if state is None:
        table.data.pop(key, None)
    else:
        table.data[key] = state
    table.send_changelog(partition, key, state)


@dataclass
class Ingestor:
    """One input topic's ingest: admit, dead-letter, run the keyed processors, produce."""

    schema_name: str
    codec: Any
    processors: Sequence[tuple[KeyedProcessor, Any]]  # (processor, its Faust table or None)
    producer: EventProducer
    memory_topic: str
    deadletter_topic: str
    metrics: EngramMetrics
    memory_codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: Any = field(default_factory=lambda: AvroCodec("DeadLetter"))

    async def ingest(self, events: Sequence[Any], topic_name: str) -> None:
        admitted = admit_batch(events, self.codec, self.schema_name)
        pending: list[tuple[Any, int, StateWrite]] = []
        for processor, table in self.processors:
            groups = group_by_key(processor, admitted.accepted)
            states: Mapping[str, JsonState] = table if table is not None else {}
            # The pure step runs off the loop (it embeds, parses, runs rules) and only reads the
            # table, which no other agent writes; table writes and changelogs stay on the loop.
            writes, derived = await asyncio.to_thread(run_isolated, processor, states, groups, admitted)
            pending.extend((table, groups[w.group][0][1]["partition"], w) for w in writes)
            self.send_memory_events(derived)
        self.send_dead_letters(admitted, topic_name)
        # Derived events are delivered before the new states are written: a crash in between
        # redelivers the batch to the old state, which derives the same events again (same ids).
        # The other order could record turns as seen whose events were never delivered.
        await self.producer.flush()
        for table, partition, write in pending:
            write_state(table, partition, write.key, write.state)
        # Counted once its derived events are delivered: a scrape showing N means N are fully ingested.
        self.metrics.ingest_messages.labels(topic_name).inc(len(admitted.accepted))

    def send_dead_letters(self, admitted: Admitted, topic_name: str) -> None:
        for key, letter, verdict in admitted.dead:
            self.producer.send(self.deadletter_topic, key, self.deadletter_codec.encode(letter))
            self.metrics.deadletters.labels(topic_name, verdict.reason_class).inc()

    def send_memory_events(self, derived: list[MemoryEvent]) -> None:
        encode = self.memory_codec.encode
        for memory_event in derived:
            self.producer.send(self.memory_topic, memory_event["key"].encode(), encode(memory_event))
            self.metrics.count_memory_event(memory_event)


def register_ingest_agent(
    app: Any,
    topic: Any,
    name: str,
    ingestor: Ingestor,
    topic_name: str,
    batch_max: int,
    within_s: float,
    gaps: GapRepair | None = None,
) -> Any:
    async def ingest(events: Sequence[Any]) -> None:
        await ingestor.ingest(events, topic_name)

    return register_batch_agent(app, topic, name, ingest, batch_max, within_s, gaps)
