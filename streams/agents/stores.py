"""Store agent: engram.memory → the derived stores (vectors, graph), in batches.

Step 2 of the commit order (streams/commit.py): every sink applies the batch idempotently before
the batch is acknowledged. A memory event that cannot be decoded is dead-lettered (stage "sink"),
not retried forever and not dropped.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from processors.intake import Accepted, admit, dead_letter
from processors.retrieval.applied import OffsetEvent
from schemas.codec import AvroCodec
from schemas.records import MemoryEvent
from sinks.base import BatchingSink, SinkItem
from streams.agents.batches import register_batch_agent
from streams.commit import CommitPlan, commit_batch
from streams.gaps import GapRepair
from streams.metrics import EngramMetrics
from streams.output import EventProducer


@dataclass
class StoreApplier:
    sinks: Sequence[tuple[str, BatchingSink[MemoryEvent]]]
    producer: EventProducer
    deadletter_topic: str
    metrics: EngramMetrics
    # In-process consumers of stored memory (the compile path's view), awaited on the event loop
    # with each decoded event's (partition, offset, event).
    observers: Sequence[Callable[[Sequence[OffsetEvent]], Awaitable[None]]] = ()
    codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: Any = field(default_factory=lambda: AvroCodec("DeadLetter"))

    def stage(self, events: Sequence[Any]) -> list[OffsetEvent]:
        """Decode and add each event to every sink; dead-letter what cannot be decoded."""
        records: list[OffsetEvent] = []
        for event in events:
            m = event.message
            verdict = admit(self.codec, "MemoryEvent", m.value)
            if not isinstance(verdict, Accepted):
                letter = dead_letter(verdict, m.topic, m.partition, m.offset, m.key, m.value, stage="sink")
                self.producer.send(self.deadletter_topic, m.key, self.deadletter_codec.encode(letter))
                self.metrics.deadletters.labels(m.topic, verdict.reason_class).inc()
                continue
            item = SinkItem(m.topic, m.partition, m.offset, int(m.timestamp * 1000), m.key, verdict.record)
            for _, sink in self.sinks:
                sink.add(item)
            records.append((m.partition, m.offset, verdict.record))
        return records

    def flush_sink(self, name: str, sink: BatchingSink[MemoryEvent]) -> None:
        started = time.perf_counter()
        sink.flush()
        self.metrics.sink_batch.labels(name).observe(time.perf_counter() - started)

    async def apply(self, events: Sequence[Any]) -> None:
        records = self.stage(events)
        flushes = [lambda n=name, s=sink: self.flush_sink(n, s) for name, sink in self.sinks]
        await commit_batch(CommitPlan(stores=flushes, producer_flush=self.producer.flush))
        # The in-process view learns a batch only once the stores hold it, so it is never ahead of
        # the graph that System 2 reads; the applied count then covers the view too.
        for observe in self.observers:
            await observe(records)
        for name, _ in self.sinks:
            self.metrics.sink_applied.labels(name).inc(len(records))


def register_store_agent(
    app: Any, topic: Any, applier: StoreApplier, batch_max: int, within_s: float, gaps: GapRepair | None = None
) -> Any:
    return register_batch_agent(app, topic, "engram.stores", applier.apply, batch_max, within_s, gaps)
