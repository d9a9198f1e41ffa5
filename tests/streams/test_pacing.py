"""Backpressure (streams/pacing.py): ingest waits while the memory agent's backlog is above its
bound, and only then; a wait ends when the agent catches up, on a rebalance, or after its limit."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest
from faust.types import TP

from engram.schemas.record import RawRecord, Record
from engram.streams.config import ConfigError, EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.pacing import MemoryPace, PacePolicy

TOPIC = "engram.memory"


def applied(partition: int, *offsets: int) -> list[RawRecord]:
    return [Record(TOPIC, partition, offset, 0, None, b"") for offset in offsets]


class Ends:
    """Partition ends as a test sets them (a fetch high-watermark, a producer's acknowledged end)."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}

    def __call__(self, partition: int) -> int | None:
        return self.at.get(partition)


def pace(
    max_backlog: int = 10, max_wait_s: float = 5.0, rebalancing: Callable[[], bool] = lambda: False
) -> tuple[MemoryPace, Ends, Ends]:
    fetched, produced = Ends(), Ends()
    policy = PacePolicy(max_backlog, max_wait_s, poll_s=0.01)
    return MemoryPace(TOPIC, policy, (fetched, produced), EngramMetrics(), rebalancing), fetched, produced


def metric_sample(memory: MemoryPace, name: str) -> float | None:
    return memory.metrics.registry.get_sample_value(name)


def test_the_backlog_is_what_the_larger_end_holds_past_what_was_applied_on_each_owned_partition() -> None:
    memory, fetched, produced = pace()
    memory.applied(applied(0, 0, 1, 2) + applied(1, 7))  # next offsets: 3 on partition 0, 8 on 1
    fetched.at = {0: 10, 1: 8}
    produced.at = {0: 12}  # acknowledged past the last fetch: the fetch was paused
    assert memory.backlog() == 9
    memory.applied(applied(0, 11))
    assert memory.backlog() == 0
    memory.applied([Record("engram.turns", 1, 99, 0, None, b"")])  # another topic moves nothing
    assert memory.next_offsets == {0: 12, 1: 8}


def test_partitions_no_longer_assigned_are_not_counted() -> None:
    memory, fetched, _ = pace()
    memory.applied(applied(0, 0) + applied(1, 0))
    fetched.at = {0: 50, 1: 50}
    assert memory.backlog() == 98
    memory.owned([TP(TOPIC, 1), TP("engram.turns", 0)])
    assert memory.backlog() == 49


def test_ingest_does_not_wait_under_the_bound_nor_with_backpressure_off() -> None:
    memory, fetched, _ = pace(max_backlog=10)
    memory.applied(applied(0, 0))
    fetched.at = {0: 11}  # backlog 10: at the bound, not above it
    assert asyncio.run(memory.admit()) == 0.0
    off, fetched_off, _ = pace(max_backlog=0)
    off.applied(applied(0, 0))
    fetched_off.at = {0: 1_000_000}
    assert asyncio.run(off.admit()) == 0.0
    assert metric_sample(off, "engram_ingest_paced_seconds_total") == 0.0


def test_ingest_waits_until_the_memory_agent_applies_what_is_behind() -> None:
    memory, fetched, _ = pace(max_backlog=10)
    memory.applied(applied(0, 0))
    fetched.at = {0: 101}

    async def scenario() -> tuple[float, bool]:
        waiting = asyncio.create_task(memory.admit())
        await asyncio.sleep(0.1)
        blocked = not waiting.done()
        memory.applied(applied(0, *range(1, 95)))  # backlog 6
        return await asyncio.wait_for(waiting, 1.0), blocked

    waited, blocked = asyncio.run(scenario())
    assert blocked, "ingest went on with the backlog above its bound"
    assert 0.1 <= waited < 1.0
    assert metric_sample(memory, "engram_ingest_paced_seconds_total") == pytest.approx(waited)
    assert metric_sample(memory, "engram_memory_backlog") == 6


def test_a_wait_ends_after_its_limit_and_is_counted() -> None:
    memory, fetched, _ = pace(max_backlog=10, max_wait_s=0.2)
    memory.applied(applied(0, 0))
    fetched.at = {0: 500}  # the memory agent is stuck (a store outage)
    waited = asyncio.run(memory.admit())
    assert 0.2 <= waited < 1.0
    assert metric_sample(memory, "engram_ingest_pace_timeouts_total") == 1


def test_a_rebalance_ends_the_wait() -> None:
    rebalancing = [False]
    memory, fetched, _ = pace(max_backlog=10, rebalancing=lambda: rebalancing[0])
    memory.applied(applied(0, 0))
    fetched.at = {0: 500}

    async def scenario() -> float:
        waiting = asyncio.create_task(memory.admit())
        await asyncio.sleep(0.05)
        rebalancing[0] = True  # Faust waits for the agents to go idle
        return await asyncio.wait_for(waiting, 1.0)

    assert asyncio.run(scenario()) < 1.0
    assert metric_sample(memory, "engram_ingest_pace_timeouts_total") == 0


def test_the_bound_is_configured_and_checked() -> None:
    config = EngramConfig.from_env({"ENGRAM_INGEST_MAX_BACKLOG": "500", "ENGRAM_INGEST_MAX_WAIT_S": "2.5"})
    assert config.pace == PacePolicy(500, 2.5)
    assert EngramConfig.from_env(config.to_env()).pace == config.pace
    with pytest.raises(ConfigError, match="ENGRAM_INGEST_MAX_BACKLOG"):
        EngramConfig(ingest_max_backlog=-1)
    with pytest.raises(ConfigError, match="ENGRAM_INGEST_MAX_WAIT_S"):
        EngramConfig.from_env({"ENGRAM_INGEST_MAX_WAIT_S": "0"})
