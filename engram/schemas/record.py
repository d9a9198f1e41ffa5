"""One record where a message enters a worker: its coordinates and its value.

Every path into a worker (a Faust event, a confluent-kafka message, a gap read back from the
broker, an event-log segment) is converted to a `Record` once, at the edge, and nothing past the
edge knows which path it came by. ``value`` is the raw bytes until the record is decoded; decoding
makes a new record with the same coordinates (`Record.decoded`), so a record is decoded once and
carries its provenance (`Record.ref`) wherever it goes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, TypeVar

from engram.schemas.records import EventRef

V = TypeVar("V", covariant=True)  # a Record[bytes] is a Record[bytes | None]: records are immutable
U = TypeVar("U")

RawValue = bytes | None


@dataclass(frozen=True, slots=True)
class Record(Generic[V]):
    """A message's coordinates and value. ``timestamp_ms`` is the broker timestamp (epoch ms)."""

    topic: str
    partition: int
    offset: int
    timestamp_ms: int
    key: bytes | None
    value: V

    @property
    def ref(self) -> EventRef:
        """Where the record came from, as a MemoryEvent cites its sources."""
        return {"topic": self.topic, "partition": self.partition, "offset": self.offset}

    @property
    def position(self) -> tuple[str, int, int]:
        return (self.topic, self.partition, self.offset)

    def decoded(self, value: U) -> Record[U]:
        """The same coordinates with the decoded value."""
        return Record(self.topic, self.partition, self.offset, self.timestamp_ms, self.key, value)


RawRecord = Record[RawValue]
