"""Ingest agents: input topics → admitted records → processors → engram.memory.

Undecodable or invalid messages go to the dead-letter topic with the reason, source offset and raw
bytes; the agent goes on. Processing is delegated to `IngestProcessor` implementations (pure logic
from processors/, wrapped with their per-key state) so agent bodies only wire.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from processors.intake import Accepted, Rejected, admit, dead_letter
from schemas.codec import AvroCodec
from schemas.records import DeadLetter, EventRef, MemoryEvent
from streams.metrics import EngramMetrics


class IngestProcessor(Protocol):
    """Pure processing of admitted records of one topic: (record, source ref) pairs in order."""

    def process(self, records: Sequence[tuple[Any, EventRef]]) -> list[MemoryEvent]: ...


@dataclass
class IngestOutcome:
    accepted: list[tuple[Any, EventRef]] = field(default_factory=list)
    dead: list[tuple[bytes | None, DeadLetter, Rejected]] = field(default_factory=list)


def admit_batch(events: Sequence[Any], codec: Any, schema_name: str) -> IngestOutcome:
    outcome = IngestOutcome()
    for event in events:
        m = event.message
        verdict = admit(codec, schema_name, m.value)
        if isinstance(verdict, Accepted):
            outcome.accepted.append((verdict.record, {"topic": m.topic, "partition": m.partition, "offset": m.offset}))
        else:
            letter = dead_letter(verdict, m.topic, m.partition, m.offset, m.key, m.value, stage="ingest")
            outcome.dead.append((m.key, letter, verdict))
    return outcome


@dataclass
class Ingestor:
    """One input topic's ingest: admit, dead-letter, process, produce."""

    schema_name: str
    codec: Any
    processor: IngestProcessor | None
    memory_topic: Any
    deadletter_topic: Any
    metrics: EngramMetrics
    memory_codec: AvroCodec[MemoryEvent] = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: AvroCodec[DeadLetter] = field(default_factory=lambda: AvroCodec("DeadLetter"))

    async def ingest(self, events: Sequence[Any], topic_name: str) -> None:
        outcome = admit_batch(events, self.codec, self.schema_name)
        for key, letter, verdict in outcome.dead:
            await self.deadletter_topic.send(key=key, value=self.deadletter_codec.encode(letter))
            self.metrics.deadletters.labels(topic_name, verdict.reason_class).inc()
        self.metrics.ingest_messages.labels(topic_name).inc(len(outcome.accepted))
        if self.processor is not None and outcome.accepted:
            for memory_event in self.processor.process(outcome.accepted):
                await self.memory_topic.send(
                    key=memory_event["key"].encode(), value=self.memory_codec.encode(memory_event)
                )
                self.metrics.memory_events.labels(memory_event["change"][0].rsplit(".", 1)[-1]).inc()


def register_ingest_agent(
    app: Any, topic: Any, name: str, ingestor: Ingestor, topic_name: str, batch_max: int, within_s: float
) -> Any:
    async def ingest(stream: Any) -> None:
        async for events in stream.take_events(batch_max, within=within_s):
            await ingestor.ingest(events, topic_name)
            await app.producer.flush()

    return app.agent(topic, name=name)(ingest)
