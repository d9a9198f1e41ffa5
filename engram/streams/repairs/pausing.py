"""Pausing Faust's input partitions mid-batch without dropping the rest of the batch: they are
paused in aiokafka's client, where fetching happens, not in Faust's set of active partitions.
Backpressure (streams/pacing.py, wired in streams/flow.py) pauses and resumes through `FetchedInputs`.

Faust's ``Consumer.getmany`` hands on a fetched batch one record at a time, and skips each record
whose partition is not active at that moment (nor in its buffered set); aiokafka's position has
already moved past the whole batch. Pausing a partition in Faust (``pause_partitions``) while a
batch of it was being delivered therefore dropped the rest of that batch, and resuming it fetched
on from after the batch. Measured with ``engram bench ingest --turns 10000`` (with the Trace and
dream states in parts, which write more changelog records and so block the delivery loop more
often): six runs of six stopped taking turns at 6,164 to 8,813 of 10,200, with aiokafka's fetch
positions at the end of every turns partition, the agents idle and the group's commits hundreds
of turns behind (a task dump of the stalled worker). Gap repair (streams/repairs/gaps.py) reads such a
hole back only when a later record of the partition reveals it, so when the drop was a
partition's tail, the worker waited for ever.

Paused in aiokafka's client instead (``AIOKafkaConsumer.pause``), a partition is no longer
fetched, records it had fetched and not yet returned are discarded there without moving its
position (so they are fetched again after the resume), and what Faust already holds of it is
delivered. Faust's buffer flow control, which makes a partition active again when its stream's
buffer drains, cannot resume it either (with Faust's pause it did: measured with ``--turns
300000``, 37k turns were ingested in 70 s with the pause in force). The client lives on Faust's
consumer thread, so the pause and the resume run there, in order, through its method queue.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

from aiokafka import AIOKafkaConsumer, TopicPartition
from faust.transport.drivers.aiokafka import AIOKafkaConsumerThread
from faust.types import TP, AppT

logger = logging.getLogger(__name__)

OnFetcher = Callable[[Callable[[AIOKafkaConsumer], None]], None]  # run a step on the fetching client


def set_fetching(client: AIOKafkaConsumer, partitions: Iterable[TP], *, fetch: bool) -> None:
    """Resume (``fetch``) or pause fetching ``partitions`` in aiokafka's client, those of them it
    still has assigned (a rebalance may have taken some meanwhile)."""
    assigned = client.assignment()
    chosen = [tp for tp in (TopicPartition(p.topic, p.partition) for p in partitions) if tp in assigned]
    if fetch:
        client.resume(*chosen)
    else:
        client.pause(*chosen)


@dataclass
class OnConsumerThread:
    """Runs steps on the aiokafka client of Faust's consumer thread, in the order they were asked
    for (its method queue), from the event loop without waiting for them."""

    thread: AIOKafkaConsumerThread
    pending: set[asyncio.Task[None]] = field(default_factory=set)

    def __call__(self, step: Callable[[AIOKafkaConsumer], None]) -> None:
        task = asyncio.ensure_future(self._call(step))
        self.pending.add(task)
        task.add_done_callback(self._done)

    async def _call(self, step: Callable[[AIOKafkaConsumer], None]) -> None:
        await self.thread.call_thread(self._on_thread, step)

    async def _on_thread(self, step: Callable[[AIOKafkaConsumer], None]) -> None:
        step(self.thread._ensure_consumer())  # noqa: SLF001 - the thread's own client, on its thread

    def _done(self, task: asyncio.Task[None]) -> None:
        self.pending.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.warning("pausing or resuming input partitions failed: %r", task.exception())


@dataclass(frozen=True)
class FetchedInputs:
    """The input partitions (turns, code changes) as the worker's Faust consumer fetches them."""

    app: AppT
    topics: frozenset[str]
    on_fetcher: OnFetcher

    def assigned(self) -> set[TP]:
        return {tp for tp in self.app.consumer.assignment() if tp.topic in self.topics}

    def pause(self, partitions: set[TP]) -> None:
        self.on_fetcher(partial(set_fetching, partitions=frozenset(partitions), fetch=False))

    def resume(self, partitions: set[TP]) -> None:
        self.on_fetcher(partial(set_fetching, partitions=frozenset(partitions), fetch=True))

    def settling(self) -> bool:
        return bool(self.app.rebalancing or self.app.in_recovery)


def consumer_thread(app: AppT) -> AIOKafkaConsumerThread:
    """The thread of ``app``'s consumer that owns its aiokafka client."""
    thread = getattr(app.consumer, "_thread", None)
    if not isinstance(thread, AIOKafkaConsumerThread):
        msg = f"backpressure needs Faust's aiokafka consumer thread, not a {type(thread).__name__}"
        raise TypeError(msg)
    return thread
