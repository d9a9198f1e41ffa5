"""Backpressure (streams/pacing.py): the input partitions are paused while the memory agent's
backlog is above its bound, resumed once it is not, and left to Faust while it rebalances."""

from __future__ import annotations

import pytest
from faust.types import TP

from engram.schemas.record import RawRecord, Record
from engram.streams.config import ConfigError, EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.pacing import MemoryPace, PacePolicy

TOPIC = "engram.memory"
TURNS = {TP("engram.turns", 0), TP("engram.turns", 1)}


def applied(partition: int, *offsets: int) -> list[RawRecord]:
    return [Record(TOPIC, partition, offset, 0, None, b"") for offset in offsets]


class Ends:
    """Partition ends as a test sets them (a fetch high-watermark, a producer's acknowledged end)."""

    def __init__(self) -> None:
        self.at: dict[int, int] = {}

    def __call__(self, partition: int) -> int | None:
        return self.at.get(partition)


class Inputs:
    """Input partitions as a consumer would pause and resume them."""

    def __init__(self) -> None:
        self.owned = set(TURNS)
        self.paused: set[TP] = set()
        self.resumed: list[set[TP]] = []
        self.rebalancing = False

    def assigned(self) -> set[TP]:
        return set(self.owned)

    def pause(self, partitions: set[TP]) -> None:
        self.paused |= partitions

    def resume(self, partitions: set[TP]) -> None:
        self.paused -= partitions
        self.resumed.append(partitions)

    def settling(self) -> bool:
        return self.rebalancing


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def pace(max_backlog: int = 10) -> tuple[MemoryPace, Ends, Ends, Inputs, Clock]:
    fetched, produced, inputs, clock = Ends(), Ends(), Inputs(), Clock()
    memory = MemoryPace(TOPIC, PacePolicy(max_backlog), (fetched, produced), inputs, EngramMetrics(), clock)
    return memory, fetched, produced, inputs, clock


def sample(memory: MemoryPace, name: str) -> float | None:
    return memory.metrics.registry.get_sample_value(name)


def test_the_backlog_is_what_the_larger_end_holds_past_what_was_applied_on_each_owned_partition() -> None:
    memory, fetched, produced, _, _ = pace()
    memory.applied(applied(0, 0, 1, 2) + applied(1, 7))  # next offsets: 3 on partition 0, 8 on 1
    fetched.at = {0: 10, 1: 8}
    produced.at = {0: 12}  # acknowledged past the last fetch: the fetch was paused
    assert memory.backlog() == 9
    memory.applied(applied(0, 11))
    assert memory.backlog() == 0
    memory.applied([Record("engram.turns", 1, 99, 0, None, b"")])  # another topic moves nothing
    assert memory.next_offsets == {0: 12, 1: 8}


def test_partitions_no_longer_assigned_are_not_counted() -> None:
    memory, fetched, _, _, _ = pace()
    memory.applied(applied(0, 0) + applied(1, 0))
    fetched.at = {0: 50, 1: 50}
    assert memory.backlog() == 98
    memory.owned([TP(TOPIC, 1), TP("engram.turns", 0)])
    assert memory.backlog() == 49


def test_the_inputs_pause_above_the_bound_and_resume_once_the_agent_applied_what_was_behind() -> None:
    memory, fetched, _, inputs, clock = pace(max_backlog=10)
    memory.applied(applied(0, 0))
    fetched.at = {0: 11}  # backlog 10: at the bound, not above it
    assert not memory.steer() and inputs.paused == set()
    fetched.at = {0: 101}  # an ingest batch derived 90 more
    assert memory.steer() and inputs.paused == TURNS
    assert sample(memory, "engram_memory_backlog") == 100
    clock.now += 2.5
    memory.applied(applied(0, *range(1, 95)))  # backlog 6
    assert inputs.paused == set(), "the inputs stayed paused after the agent caught up"
    assert sample(memory, "engram_ingest_paced_seconds_total") == pytest.approx(2.5)
    assert sample(memory, "engram_memory_backlog") == 6


def test_inputs_resumed_by_a_recovery_are_paused_again_and_revoked_ones_are_not_resumed() -> None:
    memory, fetched, _, inputs, _ = pace(max_backlog=10)
    memory.applied(applied(0, 0))
    fetched.at = {0: 500}
    memory.steer()
    inputs.paused.clear()  # a recovery ended and resumed every partition
    memory.steer()
    assert inputs.paused == TURNS
    inputs.owned = {TP("engram.turns", 1)}  # a rebalance took partition 0 away (and Faust forgot it)
    inputs.paused.discard(TP("engram.turns", 0))
    memory.applied(applied(0, *range(1, 500)))
    assert inputs.resumed == [{TP("engram.turns", 1)}] and inputs.paused == set()


def test_nothing_is_paused_or_resumed_while_the_worker_rebalances_or_with_backpressure_off() -> None:
    memory, fetched, _, inputs, _ = pace(max_backlog=10)
    memory.applied(applied(0, 0))
    fetched.at = {0: 500}
    inputs.rebalancing = True
    assert not memory.steer() and inputs.paused == set()
    inputs.rebalancing = False
    assert memory.steer()
    inputs.rebalancing = True
    memory.applied(applied(0, *range(1, 500)))
    assert inputs.paused == TURNS, "steered while Faust pauses and resumes partitions itself"
    off, fetched_off, _, inputs_off, _ = pace(max_backlog=0)
    off.applied(applied(0, 0))
    fetched_off.at = {0: 1_000_000}
    assert not off.steer() and inputs_off.paused == set()


def test_the_bound_is_configured_and_checked() -> None:
    config = EngramConfig.from_env({"ENGRAM_INGEST_MAX_BACKLOG": "500"})
    assert config.ingest_max_backlog == 500
    assert EngramConfig.from_env(config.to_env()).ingest_max_backlog == 500
    with pytest.raises(ConfigError, match="ENGRAM_INGEST_MAX_BACKLOG"):
        EngramConfig(ingest_max_backlog=-1)
