"""Ingest agents: input topics → admitted records → keyed processors → engram.memory.

Undecodable or invalid messages go to the dead-letter topic with the reason, source offset and raw
bytes; the agent goes on. The logic is in `KeyedProcessor`s (pure processors/ code behind a small
adapter): each gets one key's records of a batch, in order, and that key's state from a Faust
table. The new state is written to the table at the key's source partition (so changelog and
input stay co-partitioned), and the derived events are produced before the batch is acknowledged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from processors.intake import Accepted, Rejected, admit, dead_letter
from schemas.codec import AvroCodec
from schemas.records import DeadLetter, EventRef, MemoryEvent
from streams.metrics import EngramMetrics
from streams.output import EventProducer

JsonState = dict[str, Any]
KeyedRecords = list[tuple[Any, EventRef]]


class KeyedProcessor(Protocol):
    """One processing step over a batch, grouped by key. Pure apart from the states it is handed.

    ``process`` gets each key's records in arrival order and each key's state (None when new), and
    returns the keys' new states (only those that changed) and the derived events. Keys are
    independent, so processing them together (one embedding call per batch) changes no result.
    """

    name: str

    def key_of(self, record: Any) -> str: ...

    def process(
        self, states: dict[str, JsonState | None], groups: dict[str, KeyedRecords]
    ) -> tuple[dict[str, JsonState], list[MemoryEvent]]: ...


@dataclass
class Admitted:
    accepted: list[tuple[Any, EventRef]] = field(default_factory=list)
    dead: list[tuple[bytes | None, DeadLetter, Rejected]] = field(default_factory=list)


def admit_batch(events: Sequence[Any], codec: Any, schema_name: str) -> Admitted:
    outcome = Admitted()
    for event in events:
        m = event.message
        verdict = admit(codec, schema_name, m.value)
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


def write_state(table: Any, partition: int, key: str, state: JsonState) -> None:
    """Set a table key and send its changelog record to the key's *source* partition.

    A batched agent has no single "current event", so Faust's implicit partition choice would be
    wrong for all but one key; the explicit partition keeps table and input co-partitioned.
    """
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
    memory_codec: AvroCodec[MemoryEvent] = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: AvroCodec[DeadLetter] = field(default_factory=lambda: AvroCodec("DeadLetter"))

    async def ingest(self, events: Sequence[Any], topic_name: str) -> None:
        admitted = admit_batch(events, self.codec, self.schema_name)
        self.send_dead_letters(admitted, topic_name)
        for processor, table in self.processors:
            groups = group_by_key(processor, admitted.accepted)
            states = {key: (table.get(key) if table is not None else None) for key in groups}
            # The pure step runs off the loop (it embeds, parses, runs rules); table writes stay on it.
            new_states, derived = await asyncio.to_thread(processor.process, states, groups)
            if table is not None:
                for key, state in new_states.items():
                    write_state(table, groups[key][0][1]["partition"], key, state)
            self.send_memory_events(derived)
        await self.producer.flush()
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
            self.metrics.memory_events.labels(memory_event["change"][0].rsplit(".", 1)[-1]).inc()


def register_ingest_agent(
    app: Any, topic: Any, name: str, ingestor: Ingestor, topic_name: str, batch_max: int, within_s: float
) -> Any:
    async def ingest(stream: Any) -> None:
        async for events in stream.take_events(batch_max, within=within_s):
            await ingestor.ingest(events, topic_name)

    return app.agent(topic, name=name)(ingest)
