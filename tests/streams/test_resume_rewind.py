"""A restarted worker resumes every input partition where the group's commits say, even one the
fetcher ran past while it was inactive (streams/repairs/recovery.py, "A restarted worker that received
nothing"): partitions never committed, or committed at 0, are sought to their earliest offset."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pytest
from faust.types import TP

from engram.streams.repairs.recovery import ClearFirstRecovery, rewind_uncommitted, uncommitted
from tests.streams.test_gaps_resume import FakeRecovery

TURNS_0, TURNS_1, MEMORY_0 = TP("e.engram.turns", 0), TP("e.engram.turns", 1), TP("e.engram.memory", 0)


def test_uncommitted_partitions_are_those_without_a_commit_above_zero() -> None:
    committed: dict[TP, int | None] = {TURNS_0: None, TURNS_1: 0, MEMORY_0: 12}
    assert uncommitted([MEMORY_0, TURNS_1, TURNS_0], committed) == [TURNS_0, TURNS_1]
    assert uncommitted([TURNS_0], {}) == [TURNS_0]  # a partition Faust recorded nothing for
    assert uncommitted([MEMORY_0], committed) == []


@dataclass
class SeekingConsumer:
    """A consumer after Faust's ``perform_seek``: a read offset per partition (the committed
    one), fetch positions, and the earliest offset of each partition at the broker."""

    _read_offset: Mapping[TP, int | None]
    earliest: Mapping[TP, int]
    positions: dict[TP, int] = field(default_factory=dict)

    async def earliest_offsets(self, *tps: TP) -> Mapping[TP, int]:
        return {tp: self.earliest[tp] for tp in tps}

    async def seek_wait(self, offsets: Mapping[TP, int]) -> None:
        self.positions.update(offsets)


def rewound(consumer: SeekingConsumer, reset: str = "earliest") -> list[TP]:
    return asyncio.run(rewind_uncommitted(consumer, [TURNS_0, TURNS_1, MEMORY_0], reset))


def test_a_partition_never_committed_is_sought_back_to_its_earliest_offset() -> None:
    # The fetcher had run to the end of turns[1] (60) and memory[0] while they were inactive.
    consumer = SeekingConsumer(
        {TURNS_0: 7, TURNS_1: None, MEMORY_0: 0},
        earliest={TURNS_0: 0, TURNS_1: 0, MEMORY_0: 3},
        positions={TURNS_0: 7, TURNS_1: 60, MEMORY_0: 289},
    )
    assert rewound(consumer) == [MEMORY_0, TURNS_1]
    assert consumer.positions == {TURNS_0: 7, TURNS_1: 0, MEMORY_0: 3}


def test_committed_partitions_keep_the_committed_seek() -> None:
    consumer = SeekingConsumer({TURNS_0: 7, TURNS_1: 1, MEMORY_0: 40}, earliest={}, positions={TURNS_0: 7})
    assert rewound(consumer) == []
    assert consumer.positions == {TURNS_0: 7}


def test_with_latest_reset_an_uncommitted_partition_stays_where_it_is() -> None:
    consumer = SeekingConsumer({TURNS_0: None, TURNS_1: None, MEMORY_0: None}, earliest={}, positions={TURNS_0: 9})
    assert rewound(consumer, "latest") == []
    assert consumer.positions == {TURNS_0: 9}


@pytest.mark.parametrize("ending", ["on_recovery_completed", "_resume_streams"])
@pytest.mark.parametrize(("committed", "rewinds"), [(None, True), (0, True), (5, False)])
def test_the_rewind_follows_the_committed_seek(ending: str, committed: int | None, rewinds: bool) -> None:
    recovery = FakeRecovery()
    recovery.app.consumer.committed = committed
    asyncio.run(getattr(ClearFirstRecovery, ending)(cast(Any, recovery), 1))
    calls = [c for c in recovery.calls if c not in ("rebalance complete", "ready", "fetch")]
    expected = ["clear queues", "flow on", "activate e.engram.turns", "seek"]
    assert calls == expected + (["rewind e.engram.turns[0] to 0"] if rewinds else [])
