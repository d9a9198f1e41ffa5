"""The loop every batch agent runs: Faust batches become records at the edge, completed by gap
repair, each handled under a `BatchGuard`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from faust import Stream
from faust.types import TP, AgentT, AppT, StreamT, TopicT

from engram.schemas.record import RawRecord
from engram.streams.edge import record_of_event
from engram.streams.metrics import EngramMetrics
from engram.streams.repairs.gaps import GapRepair
from engram.streams.repairs.unfinished import BatchGuard

BatchHandler = Callable[[Sequence[RawRecord]], Awaitable[None]]


def record_lag(app: AppT, records: Sequence[RawRecord], metrics: EngramMetrics) -> None:
    """``engram_consumer_lag{topic, partition}`` after a batch: the partition's fetch high-watermark
    (what the broker said the partition holds when it answered the fetch) minus the next offset to
    process. Not the consumer's reported end offsets: the stand-in reports those wrong (ARCHITECTURE.md).
    Labels are topics and partition numbers only, so their number is bounded by the deployment."""
    last: dict[tuple[str, int], int] = {}
    for record in records:
        key = (record.topic, record.partition)
        last[key] = max(last.get(key, -1), record.offset)
    for (topic, partition), offset in last.items():
        highwater = fetch_highwater(app, topic, partition)
        if highwater is not None:
            metrics.consumer_lag.labels(topic, str(partition)).set(max(0, highwater - offset - 1))


def fetch_highwater(app: AppT, topic: str, partition: int) -> int | None:
    """What the broker said the partition holds when it last answered a fetch (None: not fetched
    yet, or reassigned meanwhile)."""
    try:
        highwater = app.consumer.highwater(TP(topic, partition))
    except (AssertionError, KeyError, TypeError, AttributeError):
        return None
    return None if highwater is None else int(highwater)


def register_batch_agent(
    app: AppT,
    topic: TopicT,
    name: str,
    handle: BatchHandler,
    batch_max: int,
    within_s: float,
    gaps: GapRepair | None = None,
    metrics: EngramMetrics | None = None,
) -> AgentT[Any]:
    """Register agent ``name`` on ``topic``: ``handle`` gets each batch of records (at most
    ``batch_max``, or what arrived within ``within_s``), completed by ``gaps`` when given. The
    batch is acknowledged when ``handle`` returns (step 5 of the commit order, streams/commit.py)."""
    guard = BatchGuard(name)

    async def run_batches(stream: StreamT[Any]) -> None:
        if not isinstance(stream, Stream):  # take_events is on Faust's Stream, not on StreamT
            msg = f"agent {name} got a {type(stream).__name__}, not a faust Stream"
            raise TypeError(msg)
        async for events in stream.take_events(batch_max, within=within_s):
            async with guard:  # a batch it cannot finish stops the worker unacknowledged
                records = [record_of_event(e) for e in events]
                if metrics is not None:
                    metrics.batch_size.labels(name).set(len(records))
                # Records Faust skipped are read back and handled first, in offset order (streams/repairs/gaps.py).
                await handle(records if gaps is None else await gaps.complete(records))
                if metrics is not None:
                    record_lag(app, records, metrics)

    return app.agent(topic, name=name)(run_batches)
