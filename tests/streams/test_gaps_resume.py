"""The end of a worker's recovery (streams/repairs/recovery.py): the agents' queues are cleared before any
input record can be in one, and the inputs are seeked after they become active (so the seek also
rewinds over records the fetcher dropped while they were inactive). Faust's own order, run on the
same recording fakes, shows the race it replaces: inputs active first, queues cleared last."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib.metadata import version
from typing import Any, cast

import pytest
from faust.tables.recovery import Recovery
from faust.types import TP

from engram.streams.app import faust_settings
from engram.streams.config import EngramConfig
from engram.streams.repairs.recovery import ClearFirstRecovery, ClearFirstTables

INPUT, CHANGELOG = TP("e.engram.turns", 0), TP("e-trace-state-changelog", 0)
CONF = {"broker_request_timeout": 5.0, "consumer_auto_offset_reset": "earliest"}


@dataclass
class Signal:
    calls: list[str]
    name: str

    async def send(self) -> None:
        self.calls.append(self.name)


@dataclass
class FakeConsumer:
    calls: list[str]
    consumer_generation_id: int = 1
    committed: int | None = 5  # the group's committed offset of INPUT
    _read_offset: dict[TP, int | None] = field(default_factory=dict)

    def assignment(self) -> set[TP]:
        return {INPUT, CHANGELOG}

    async def perform_seek(self) -> None:
        self.calls.append("seek")
        self._read_offset[INPUT] = self.committed  # Faust records the committed offset as read

    async def earliest_offsets(self, *tps: TP) -> dict[TP, int]:
        return dict.fromkeys(tps, 0)

    async def seek_wait(self, offsets: Mapping[TP, int]) -> None:
        self.calls.extend(f"rewind {tp.topic}[{tp.partition}] to {offset}" for tp, offset in offsets.items())

    def resume_flow(self) -> None:
        self.calls.append("flow on")

    def resume_partitions(self, tps: Iterable[TP]) -> None:
        self.calls.append("activate " + ",".join(sorted(tp.topic for tp in tps)))


@dataclass
class FakeApp:
    calls: list[str]
    consumer: FakeConsumer = field(init=False)
    consumer_generation_id: int = 1
    conf: Any = field(default_factory=lambda: type("Conf", (), CONF)())

    def __post_init__(self) -> None:
        self.consumer = FakeConsumer(self.calls)
        self.on_rebalance_complete = Signal(self.calls, "rebalance complete")
        self.flow_control = self
        self._fetcher = self
        self.assignor = self

    def assigned_standbys(self) -> set[TP]:
        return set()

    def resume(self) -> None:  # flow_control.resume(): clears every agent queue
        self.calls.append("clear queues")

    async def maybe_start(self) -> None:  # the fetcher
        self.calls.append("fetch")

    def on_rebalance_end(self) -> None:
        self.calls.append("ready")


class QuietLog:
    """Faust's service logger surface (``info``, ``warning``, ``dev``), discarding everything."""

    def info(self, *args: object) -> None:
        pass

    def warning(self, *args: object) -> None:
        pass

    def dev(self, *args: object) -> None:
        pass


@dataclass
class FakeRecovery:
    """The attributes of a Recovery that the end-of-recovery steps use."""

    calls: list[str] = field(default_factory=list)
    log: QuietLog = field(default_factory=QuietLog)
    completed: asyncio.Event = field(default_factory=asyncio.Event)

    def __post_init__(self) -> None:
        self.app = FakeApp(self.calls)
        self.tables = self

    async def _wait(self, coro: Awaitable[None], timeout: float) -> None:
        await coro

    async def _start_inputs(self) -> None:  # the step under test, bound to this fake
        await ClearFirstRecovery._start_inputs(cast(Any, self))

    def _is_changelog_tp(self, tp: TP) -> bool:
        return tp.topic.endswith("-changelog")

    def on_actives_ready(self) -> None:
        pass

    def values(self) -> list[Any]:  # tables.values(): no table callbacks to await
        return []

    def _set_recovery_ended(self) -> None:
        pass

    def on_standbys_ready(self) -> None:
        pass


def end_of_recovery(resume: Callable[[Any, int], Awaitable[None]]) -> list[str]:
    recovery = FakeRecovery()

    async def run() -> None:
        await resume(recovery, 1)
        assert recovery.completed.is_set()

    asyncio.run(run())
    return [c for c in recovery.calls if c not in ("rebalance complete", "ready", "fetch")]


ENDINGS = ("on_recovery_completed", "_resume_streams")  # with tables, without tables


@pytest.mark.parametrize("ending", ENDINGS)
def test_queues_are_cleared_before_inputs_flow_and_the_seek_follows(ending: str) -> None:
    calls = end_of_recovery(getattr(ClearFirstRecovery, ending))
    assert calls == ["clear queues", "flow on", "activate e.engram.turns", "seek"]


@pytest.mark.parametrize("ending", ENDINGS)
def test_faust_order_clears_the_queues_after_inputs_flow(ending: str) -> None:
    calls = end_of_recovery(getattr(Recovery, ending))
    assert calls.index("activate e.engram.turns") < calls.index("seek") < calls.index("clear queues")


def test_the_worker_uses_it_and_it_was_written_for_this_faust() -> None:
    assert faust_settings(EngramConfig())["TableManager"] is ClearFirstTables
    # The override copies Faust's end-of-recovery steps: re-check streams/repairs/recovery.py on an upgrade.
    assert version("faust-streaming") == "0.15.3"
