"""Reads first (streams/priority.py): a write step's batch waits while context requests wait, at
most its bound, and goes on at once when none does; the request path says when requests arrive and
when they are answered, and a write step (`KeyedSteps`) waits its turn before it runs."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from engram.schemas.codec import AvroCodec
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import MemoryEvent
from engram.sinks.eventlog.sink import EventLogSink
from engram.streams.agents.answering import Answer, Deliveries, RequestPath
from engram.streams.agents.ingest import KeyedRecords, KeyedSteps, MemoryOutputs, StateWrite
from engram.streams.agents.requests import Fetched
from engram.streams.commit import Batch, CommitTargets, JsonState
from engram.streams.edge import Admission
from engram.streams.metrics import EngramMetrics
from engram.streams.priority import ReadPriority
from engram.streams.repairs.unfinished import BatchGuard


def test_writes_go_on_at_once_when_no_request_waits() -> None:
    reads = ReadPriority(max_wait_s=5.0)

    async def turn() -> float:
        return await reads.writes_turn()

    started = time.monotonic()
    assert asyncio.run(turn()) == 0.0
    assert time.monotonic() - started < 0.5


def test_writes_wait_until_the_waiting_requests_are_answered() -> None:
    metrics = EngramMetrics()
    reads = ReadPriority(max_wait_s=5.0, metrics=metrics)

    async def scenario() -> tuple[float, list[str]]:
        order: list[str] = []
        reads.arrived(2)

        async def answer() -> None:
            await asyncio.sleep(0.05)
            order.append("answered 1")
            reads.answered(1)
            await asyncio.sleep(0.05)
            order.append("answered 2")
            reads.answered(1)

        answering = asyncio.create_task(answer())
        waited = await reads.writes_turn()
        order.append("write")
        await answering
        return waited, order

    waited, order = asyncio.run(scenario())
    assert order == ["answered 1", "answered 2", "write"], "the write waits for every request, not the first"
    assert 0.08 <= waited < 2.0
    assert metrics.registry.get_sample_value("engram_write_yield_seconds_total") == pytest.approx(waited)


def test_writes_never_wait_longer_than_the_bound() -> None:
    reads = ReadPriority(max_wait_s=0.1)

    async def scenario() -> float:
        reads.arrived(1)  # never answered: a compile that hangs must not stop the writes
        return await reads.writes_turn()

    assert 0.09 <= asyncio.run(scenario()) < 1.0


def test_a_zero_bound_turns_the_priority_off() -> None:
    reads = ReadPriority(max_wait_s=0.0)

    async def scenario() -> float:
        reads.arrived(3)
        return await reads.writes_turn()

    assert asyncio.run(scenario()) == 0.0
    with pytest.raises(ValueError, match="0 \\(never\\) or more"):
        ReadPriority(max_wait_s=-1.0)


@dataclass
class Answers:
    """The compile stood in for: each request answered with nothing to send, noting how many
    requests the priority counted as waiting when it was compiled."""

    reads: ReadPriority
    seen_waiting: list[int] = field(default_factory=list)

    async def answer(self, record: RawRecord, _received_s: float) -> Answer:
        self.seen_waiting.append(self.reads.waiting)
        await asyncio.sleep(0)
        return Answer([], [])


class NoBroker:
    """Delivery reports for a path that sends nothing."""

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Callable[[bool], None]) -> None:
        report(True)

    def serve_reports(self, timeout_s: float) -> int:
        time.sleep(min(timeout_s, 0.01))
        return 0


def test_the_request_path_counts_a_batch_answered_once_all_of_it_is(tmp_path: Path) -> None:
    reads = ReadPriority(max_wait_s=5.0)
    answers = Answers(reads)
    log = EventLogSink(tmp_path / "log")
    log.setup()

    async def acknowledge(_offsets: dict[int, int]) -> None:
        return None

    path = RequestPath(answers.answer, Deliveries(NoBroker()), CommitTargets(log), acknowledge, reads)

    async def scenario() -> int:
        fetches: asyncio.Queue[Fetched] = asyncio.Queue()
        records: list[RawRecord] = [Record("t.requests", 0, i, 0, b"u", b"x") for i in range(3)]
        reads.arrived(len(records))  # as the reader's delivery does, on the loop
        fetches.put_nowait(Fetched(records, 0.0))
        serving = asyncio.create_task(path.run(fetches, BatchGuard("test")))
        await asyncio.wait_for(reads.writes_turn(), 5.0)
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        return reads.waiting

    with log:
        assert asyncio.run(scenario()) == 0
    assert answers.seen_waiting == [3, 3, 3]


@dataclass
class RecordedStep:
    """A keyed step that notes when it ran."""

    ran: list[str]
    name: str = "step"

    def key_of(self, record: Record[Any]) -> str:
        return "user"

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        self.ran.append("step")
        return [], []


def test_a_write_step_runs_after_the_waiting_requests() -> None:
    reads = ReadPriority(max_wait_s=5.0)
    ran: list[str] = []
    metrics = EngramMetrics()
    admission: Admission[Any] = Admission(
        AvroCodec("ConversationTurn"), "ConversationTurn", "ingest", "t.deadletter", AvroCodec("DeadLetter"), metrics
    )
    steps = KeyedSteps(
        [(RecordedStep(ran), None)], admission, MemoryOutputs("t.memory", AvroCodec("MemoryEvent"), metrics), reads
    )

    async def scenario() -> None:
        reads.arrived(1)

        async def answer() -> None:
            await asyncio.sleep(0.05)
            ran.append("answered")
            reads.answered(1)

        answering = asyncio.create_task(answer())
        await steps.run(admission.admit([]), [Record("t.turns", 0, 0, 0, b"user", {"x": 1})], Batch())
        await answering

    asyncio.run(scenario())
    assert ran == ["answered", "step"]
