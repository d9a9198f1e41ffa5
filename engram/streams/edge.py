"""Where a message enters a worker: it becomes a `Record` once, and is decoded once.

`record_of_event` converts a Faust event; `Admission.admit` decodes a batch of records and
validates them (processors/intake.py), turning each rejection into a dead letter with its reason
and source coordinates. Counters show the rule holds: `engram_received_messages_total` and
`engram_decoded_messages_total` grow together, per topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from confluent_kafka import Message
from faust.types import EventT

from engram.processors.intake import Accepted, Decoder, Rejected, admit, dead_letter
from engram.schemas.record import RawRecord, Record
from engram.streams.codecs import Codec
from engram.streams.commit import Output
from engram.streams.metrics import EngramMetrics, cpu_of

T = TypeVar("T")


def record_of_message(message: Message) -> RawRecord:
    """A confluent-kafka message as a record."""
    _, timestamp_ms = message.timestamp()
    return Record(
        message.topic() or "", message.partition() or 0, message.offset() or 0, timestamp_ms, message.key(),
        message.value(),
    )  # fmt: skip


def record_of_event(event: EventT[Any]) -> RawRecord:
    """A Faust event's message as a record (Faust's timestamp is in seconds)."""
    m = event.message
    return Record(m.topic, m.partition, m.offset, int(m.timestamp * 1000), m.key, m.value)


@dataclass
class Admitted(Generic[T]):
    """A batch after admission: the decoded records, and the dead letters of the rest (with their
    verdicts, in order: a request path tells a known requester why, processors/trust/refusals.py)."""

    accepted: list[Record[T]] = field(default_factory=list)
    raw: dict[tuple[str, int, int], RawRecord] = field(default_factory=dict)
    dead: list[Output] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)

    def raw_of(self, records: Iterable[Record[T]]) -> list[RawRecord]:
        """The records as received (to archive, or to dead-letter after a processing failure); a
        record this batch derived itself (streams/agents/stores.py ``with_upstream``) has none."""
        return [self.raw[r.position] for r in records if r.position in self.raw]


@dataclass(frozen=True)
class Admission(Generic[T]):
    """Decodes and validates one topic's records, once each; rejects become dead letters."""

    decoder: Decoder[T]
    schema_name: str
    stage: str  # where a rejection happened, as the dead letter says ("ingest", "sink", …)
    deadletter_topic: str
    deadletter_codec: Codec
    metrics: EngramMetrics

    def admit(self, records: Sequence[RawRecord]) -> Admitted[T]:
        with cpu_of(self.metrics.stage_cpu, "decode"):
            return self._admit(records)

    def _admit(self, records: Sequence[RawRecord]) -> Admitted[T]:
        outcome: Admitted[T] = Admitted()
        for record in records:
            self.metrics.received.labels(record.topic).inc()
            self.metrics.decodes.labels(record.topic).inc()
            outcome.raw[record.position] = record
            verdict = admit(self.decoder, self.schema_name, record.value, record.timestamp_ms)
            if isinstance(verdict, Accepted):
                outcome.accepted.append(record.decoded(verdict.record))
            else:
                outcome.dead.append(self.dead_letter(record, verdict, self.stage))
                outcome.rejected.append(verdict)
        return outcome

    def dead_letter(self, record: RawRecord, verdict: Rejected, stage: str) -> Output:
        """The dead letter of one record, counted by topic and reason class."""
        letter = dead_letter(verdict, record.topic, record.partition, record.offset, record.key, record.value, stage)
        self.metrics.deadletters.labels(record.topic, verdict.reason_class).inc()
        return Output(self.deadletter_topic, record.key, self.deadletter_codec.encode(letter))
