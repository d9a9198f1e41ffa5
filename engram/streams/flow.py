"""Backpressure on Faust's consumer (the logic is streams/pacing.py): the input partitions it pauses,
and a fix to Faust's buffer flow control, which must not resume a paused partition (pinned in
tests/streams/test_faust_pins.py).

When a stream's buffer fills, Faust stops fetching the partition (`Consumer.on_buffer_full`), and
when it drains to half, `Consumer.on_buffer_drop` makes the partition active again, without asking
whether it was paused meanwhile (`Consumer.pause_partitions`). Backpressure (streams/pacing.py)
pauses the input partitions while the memory agent is behind; measured with `engram bench ingest
--turns 300000`, every drained buffer resumed them: 37k turns were ingested in 70 s with the pause
in force, and the memory backlog went from 10k to 137k against a bound of 20k.

`keep_paused_on_buffer_drop` replaces the method on one consumer: a paused partition leaves the
buffered set (its buffer drained) but stays inactive until it is resumed.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import partial

import faust
from faust.transport.consumer import Consumer
from faust.types import TP

from engram.streams.agents.batches import fetch_highwater
from engram.streams.config import EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.output import EventProducer
from engram.streams.pacing import MemoryPace, PacePolicy
from engram.streams.signals import on_partitions


def keep_paused_on_buffer_drop(consumer: Consumer) -> None:
    """Make ``consumer``'s buffer-drop callback leave paused partitions paused. Call it before the
    worker starts: Faust's conductor reads the callback when it subscribes the topics."""
    drop = consumer.on_buffer_drop

    def on_buffer_drop(tp: TP) -> None:
        if tp in consumer._paused_partitions:  # noqa: SLF001 - the pinned internal this fixes
            consumer._buffered_partitions.discard(tp)  # noqa: SLF001
            return
        drop(tp)

    setattr(consumer, "on_buffer_drop", on_buffer_drop)  # noqa: B010 - one consumer's method, replaced once


@dataclass(frozen=True)
class FetchedInputs:
    """The input partitions (turns, code changes) as the worker's Faust consumer fetches them."""

    app: faust.App
    topics: frozenset[str]

    def assigned(self) -> set[TP]:
        return {tp for tp in self.app.consumer.assignment() if tp.topic in self.topics}

    def pause(self, partitions: set[TP]) -> None:
        self.app.consumer.pause_partitions(partitions)

    def resume(self, partitions: set[TP]) -> None:
        self.app.consumer.resume_partitions(partitions)

    def settling(self) -> bool:
        return bool(self.app.rebalancing or self.app.in_recovery)


def memory_pace(app: faust.App, config: EngramConfig, producer: EventProducer, metrics: EngramMetrics) -> MemoryPace:
    """The memory agent's backlog on this worker, which pauses its input partitions
    (streams/pacing.py): its partitions' ends are the consumer's fetch high-watermarks and what
    ``producer`` was acknowledged. Looked at after each batch and every ``check_s``."""
    topic, policy = config.topics.memory, PacePolicy(config.ingest_max_backlog)

    def produced(partition: int) -> int | None:
        return producer.ends.get((topic, partition))

    inputs = FetchedInputs(app, frozenset({config.topics.turns, config.topics.code}))
    if not isinstance(app.consumer, Consumer):
        msg = f"backpressure needs Faust's Consumer, not a {type(app.consumer).__name__}"
        raise TypeError(msg)
    keep_paused_on_buffer_drop(app.consumer)  # else a drained buffer resumes a paused input
    pace = MemoryPace(topic, policy, (partial(fetch_highwater, app, topic), produced), inputs, metrics)

    async def owned(assigned: Iterable[TP]) -> None:
        pace.owned(assigned)

    on_partitions(app.on_partitions_assigned, owned)

    async def steer() -> None:
        pace.steer()

    app.timer(policy.check_s, name="engram.pace")(steer)
    return pace
