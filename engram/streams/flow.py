"""Backpressure on Faust's consumer, wired: the memory agent's backlog (streams/pacing.py) pauses
and resumes the worker's input partitions in aiokafka's client (streams/repairs/pausing.py, which
says why not in Faust's set of active partitions).
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial

import faust
from faust.types import TP

from engram.streams.agents.batches import fetch_highwater
from engram.streams.config import EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.output import EventProducer
from engram.streams.pacing import MemoryPace, PacePolicy
from engram.streams.repairs.pausing import FetchedInputs, OnConsumerThread, consumer_thread
from engram.streams.signals import on_partitions


def memory_pace(app: faust.App, config: EngramConfig, producer: EventProducer, metrics: EngramMetrics) -> MemoryPace:
    """The memory agent's backlog on this worker, which pauses its input partitions
    (streams/pacing.py): its partitions' ends are the consumer's fetch high-watermarks and what
    ``producer`` was acknowledged. Looked at after each batch and every ``check_s``."""
    topic, policy = config.topics.memory, PacePolicy(config.ingest_max_backlog)

    def produced(partition: int) -> int | None:
        return producer.ends.get((topic, partition))

    fetcher = OnConsumerThread(consumer_thread(app))
    inputs = FetchedInputs(app, frozenset({config.topics.turns, config.topics.code}), fetcher)
    pace = MemoryPace(topic, policy, (partial(fetch_highwater, app, topic), produced), inputs, metrics)

    async def owned(assigned: Iterable[TP]) -> None:
        pace.owned(assigned)

    on_partitions(app.on_partitions_assigned, owned)

    async def steer() -> None:
        pace.steer()

    app.timer(policy.check_s, name="engram.pace")(steer)
    return pace
