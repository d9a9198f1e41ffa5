"""The one commit order, written once (STYLE.md example 3).

For every batch an agent takes from Kafka:

1. **Event log durable.** Archived records are appended and fsynced; the per-partition checkpoint
   (durable byte length + last offset) is replaced atomically.
2. **Derived stores.** The vector and graph sinks apply the batch (idempotent upserts by
   deterministic id).
3. **Outputs produced.** MemoryEvents, dead letters and compiled contexts are handed to the
   producer, and the producer is flushed (delivery acknowledged by the broker). Faust table
   changelogs are produced the same way, by Faust, before step 4.
4. **Offsets committed.** Only now are the batch's events acknowledged; Faust commits acknowledged
   offsets on its commit interval. `Stream.take_events` acknowledges a batch only after the loop
   body that handled it returns, which is what makes this order hold.

A crash anywhere before 4 redelivers the batch: the event log skips offsets it already holds,
sinks upsert the same ids, and derived events have the same uuid5 ids, so replays neither lose
nor duplicate anything (at-least-once transport, exactly-once effect).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

Flush = Callable[[], Any]


@dataclass
class CommitPlan:
    """What one batch must make durable, in the order above. Blocking flushes run off the loop."""

    eventlog: Sequence[Flush] = ()
    stores: Sequence[Flush] = ()
    producer_flush: Callable[[], Awaitable[Any]] | None = None
    timings_s: dict[str, float] = field(default_factory=dict)


async def commit_batch(plan: CommitPlan) -> dict[str, float]:
    """Run the commit order for one batch; return the seconds each stage took."""
    for stage, flushes in (("eventlog", plan.eventlog), ("stores", plan.stores)):
        started = time.perf_counter()
        for flush in flushes:
            await asyncio.to_thread(flush)
        plan.timings_s[stage] = time.perf_counter() - started
    if plan.producer_flush is not None:
        started = time.perf_counter()
        await plan.producer_flush()
        plan.timings_s["produce"] = time.perf_counter() - started
    return plan.timings_s
