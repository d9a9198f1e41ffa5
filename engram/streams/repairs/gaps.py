"""Detect and repair offsets an agent never received, before it processes a batch.

The archive, ingest, store and compile agents must each see every record of their topics. Each
keeps an `OffsetTracker` (processors/intake_offsets.py) over what Faust delivers; when a batch
reveals a gap, the missing range is read straight from the broker (`streams.ranges.RangeReader`:
a confluent-kafka consumer with a manual ``assign``, no group join, no commits) and spliced into
the batch ahead of the record that revealed it, so the agent processes it first and in offset
order. Idempotent sinks and
deterministic ids make re-processing a record that was in fact delivered harmless.

A gap is clipped to the group's committed offset first, so a partition that moved to another
worker and back, or the first record after a start, costs one ``committed`` look-up and no read.
On a healthy consumer the repair never reads anything: `engram_offset_gaps_total{topic,agent}`
counts the gaps it filled, and each is logged with its range.

Why a repair: Faust 0.15.3 and aiokafka 0.14.0 can deliver a partition with a hole in it, the
records their client races drop (repairs/recovery.py, repairs/pausing.py); this is the net under
those fixes and any race not yet found.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field

from engram.processors.intake_offsets import OffsetGap, OffsetTracker, splice
from engram.schemas.record import RawRecord
from engram.streams.metrics import EngramMetrics
from engram.streams.ranges import RangeReader

logger = logging.getLogger(__name__)


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
