"""Archive agent: every Engram topic → the immutable event log, in batches.

Input topics are admitted first (decoded and validated): the log keeps only valid inputs, so a
replay republishes exactly what the pipeline accepted. Rejected inputs reach the log through the
dead-letter topic, which is archived like every other Engram topic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from processors.intake import Accepted, admit
from sinks.base import SinkItem
from sinks.eventlog.sink import EventLogSink
from streams.agents.batches import register_batch_agent
from streams.commit import CommitPlan, commit_batch
from streams.gaps import GapRepair
from streams.metrics import EngramMetrics


class Archiver:
    """Turns a batch of Faust events into durable event-log records (commit order step 1)."""

    def __init__(self, sink: EventLogSink, admitted: Mapping[str, tuple[Any, str]], metrics: EngramMetrics) -> None:
        self.sink = sink
        self.admitted = admitted  # topic name -> (codec, schema name) for inputs that must be valid
        self.metrics = metrics

    def stage(self, events: Sequence[Any]) -> int:
        staged = 0
        for event in events:
            message = event.message
            value = message.value
            check = self.admitted.get(message.topic)
            if check is not None and not isinstance(admit(check[0], check[1], value), Accepted):
                continue
            self.sink.add(
                SinkItem(
                    message.topic, message.partition, message.offset, int(message.timestamp * 1000), message.key, value
                )
            )
            self.metrics.eventlog_records.labels(message.topic).inc()
            self.metrics.eventlog_bytes.inc(len(value or b""))
            staged += 1
        return staged

    async def archive(self, events: Sequence[Any]) -> None:
        self.stage(events)
        with self.metrics.eventlog_flush.time():
            await commit_batch(CommitPlan(eventlog=[self.sink.flush]))


def register_archive_agent(
    app: Any, topic: Any, archiver: Archiver, batch_max: int, within_s: float, gaps: GapRepair | None = None
) -> Any:
    return register_batch_agent(app, topic, "engram.archive", archiver.archive, batch_max, within_s, gaps)
