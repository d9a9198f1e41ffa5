"""Detect and repair offsets an agent never received, before it processes a batch.

The archive, ingest, store and compile agents must each see every record of their topics. Each
keeps an `OffsetTracker` (processors/intake_offsets.py) over what Faust delivers; when a batch reveals a
gap, the missing range is read straight from the broker (a confluent-kafka consumer with a manual
``assign``, no group join, no commits) and spliced into the batch ahead of the record that
revealed it, so the agent processes it first and in offset order. Idempotent sinks and
deterministic ids make re-processing a record that was in fact delivered harmless.

A gap is clipped to the group's committed offset first, so a partition that moved to another
worker and back, or the first record after a start, costs one ``committed`` look-up and no read.
On a healthy consumer the repair never reads anything: `engram_offset_gaps_total{topic,agent}`
counts the gaps it filled, and each is logged with its range.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from engram.processors.intake_offsets import OffsetGap, OffsetTracker, splice
from engram.schemas.record import RawRecord
from engram.streams.edge import record_of_message
from engram.streams.metrics import EngramMetrics

logger = logging.getLogger(__name__)


class GapRepairError(RuntimeError):
    """A missing offset range could not be read back from the broker in time."""


@dataclass(frozen=True, slots=True)
class GapReadConfig:
    """How the repair reads a missing range. ``fetch_wait_ms`` is short because a repair waits
    on it; the reads are rare and small."""

    timeout_s: float = 30.0
    poll_s: float = 0.1
    fetch_wait_ms: int = 50


DEFAULT_READ = GapReadConfig()


class RangeReader:
    """Blocking broker reads for the repair: where the group resumed, and an offset range."""

    def __init__(self, bootstrap: str, group_id: str, config: GapReadConfig = DEFAULT_READ) -> None:
        self.bootstrap = bootstrap
        self.group_id = group_id
        self.config = config
        self._consumer: Consumer | None = None

    def _client(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(
                {
                    "bootstrap.servers": self.bootstrap,
                    "group.id": self.group_id,  # only to read the group's committed offsets
                    "enable.auto.commit": False,
                    "enable.partition.eof": True,
                    "fetch.wait.max.ms": self.config.fetch_wait_ms,
                }
            )
        return self._consumer

    def resumed_at(self, topic: str, partition: int) -> int:
        """The group's committed offset of the partition, or the log start when it has none."""
        client = self._client()
        tp = TopicPartition(topic, partition)
        try:
            committed = client.committed([tp], timeout=self.config.timeout_s)[0].offset
            if committed >= 0:
                return int(committed)
            low, _high = client.get_watermark_offsets(tp, timeout=self.config.timeout_s)
        except KafkaException as exc:
            msg = f"where group {self.group_id} resumed {topic}[{partition}]: {exc}"
            raise GapRepairError(msg) from exc
        return max(0, int(low))

    def read(self, topic: str, partition: int, start: int, end: int) -> list[RawRecord]:
        """Records ``start <= offset < end`` of the partition, in offset order."""
        client = self._client()
        client.assign([TopicPartition(topic, partition, start)])
        try:
            return self._drain(client, topic, partition, start, end)
        finally:
            client.unassign()

    def _drain(self, client: Consumer, topic: str, partition: int, start: int, end: int) -> list[RawRecord]:
        out: list[RawRecord] = []
        next_offset = start
        deadline = time.monotonic() + self.config.timeout_s
        while next_offset < end:
            if time.monotonic() > deadline:
                wanted = f"offsets {start}..{end - 1} of {topic}[{partition}]"
                msg = f"read {len(out)} of {wanted} in {self.config.timeout_s}s"
                raise GapRepairError(msg)
            record = client.poll(self.config.poll_s)
            if record is None:
                continue
            err = record.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                msg = f"reading {topic}[{partition}] at {next_offset}: {err}"
                raise GapRepairError(msg)
            offset = record.offset() or 0
            if offset < next_offset:
                continue
            next_offset = offset + 1
            if offset < end:
                out.append(record_of_message(record))
        return out

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None


@dataclass
class GapRepair:
    """One agent's gap detector and filler (an agent's batches arrive one at a time)."""

    reader: RangeReader
    metrics: EngramMetrics
    agent: str
    tracker: OffsetTracker = field(default_factory=OffsetTracker)

    async def complete(self, records: Sequence[RawRecord]) -> list[RawRecord]:
        """The batch with every record it skipped inserted before it, per partition in offset order."""
        found = self.tracker.scan(r.position for r in records)
        if not found:
            return list(records)
        fills = await asyncio.to_thread(self.fill, found)
        return splice(records, fills) if fills else list(records)

    def fill(self, found: Sequence[tuple[int, OffsetGap]]) -> dict[int, list[RawRecord]]:
        """Read back each gap that is real (past where the group resumed); blocking."""
        fills: dict[int, list[RawRecord]] = {}
        for index, seen in found:
            gap = seen.clipped(self.reader.resumed_at(seen.topic, seen.partition))
            if gap is None or gap.start is None:
                continue
            records = self.reader.read(gap.topic, gap.partition, gap.start, gap.end)
            logger.warning(
                "%s never received offsets %d..%d of %s[%d]; read %d of them back from the broker",
                self.agent, gap.start, gap.end - 1, gap.topic, gap.partition, len(records),
            )  # fmt: skip
            self.metrics.offset_gaps.labels(gap.topic, self.agent).inc()
            fills.setdefault(index, []).extend(records)
        return fills

    def close(self) -> None:
        self.reader.close()


def gap_repair(bootstrap: str, group_id: str, metrics: EngramMetrics, agent: str) -> GapRepair:
    """An agent's `GapRepair` reading from ``bootstrap`` as consumer group ``group_id``."""
    return GapRepair(RangeReader(bootstrap, group_id), metrics, agent)
