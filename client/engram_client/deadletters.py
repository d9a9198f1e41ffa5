"""Dead letters, readable: what a worker refused on ``engram.deadletter``, and why.

A dead letter keeps the refused record whole (its key and bytes), where it came from (topic,
partition, offset), the reason's class (``empty``, ``malformed``, ``unknown_schema``,
``incompatible_schema``, ``invalid``, ``unauthorized``, ``processing``) and the reason in words.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engram_client.codec import ClientCodec


@dataclass(frozen=True, slots=True)
class DeadLetter:
    """One dead letter. ``time_ms``: when it was dead-lettered (its Kafka timestamp), when known.
    ``reason_class`` is empty for letters written before workers recorded it."""

    topic: str
    partition: int
    offset: int
    reason_class: str
    reason: str
    error_type: str
    stage: str
    key: bytes | None
    value: bytes | None
    time_ms: int | None = None

    @property
    def source(self) -> str:
        """``topic/partition/offset`` of the refused record, as `engram trace back` takes it."""
        return f"{self.topic}/{self.partition}/{self.offset}"


def read_dead_letter(
    value: bytes, *, codec: ClientCodec | None = None, topic: str = "engram.deadletter", time_ms: int | None = None
) -> DeadLetter:
    """A dead letter's bytes (a message value of ``engram.deadletter``), read in either codec
    mode (``codec``: one made with the workers' registry URL when they use one). Raises
    `ClientCodecError` for bytes that are not a dead letter."""
    record: dict[str, Any] = (codec or ClientCodec()).decode("DeadLetter", topic, value)
    return DeadLetter(
        topic=record["topic"], partition=record["partition"], offset=record["offset"],
        reason_class=record.get("reason_class") or "", reason=record["reason"], error_type=record["error_type"],
        stage=record["stage"], key=record["key"], value=record["value"], time_ms=time_ms,
    )  # fmt: skip
