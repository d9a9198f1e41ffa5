"""The two request paths answer each request once, and the Faust path (which acknowledges) returns
only when every request of its batch has delivered records, answering whatever the fetcher did
not: no broker here; the compile and the producer's delivery reports are stood in for."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from streams.agents.answering import ContextAnswerer, Emit, Output
from streams.agents.requests import RequestLedger, RequestMessage
from streams.output import DeliveryError

Report = Callable[[bool], None]


def request(partition: int, offset: int) -> RequestMessage:
    return RequestMessage("engram.context.requests", partition, offset, b"user", f"{partition}:{offset}".encode())


@dataclass
class Broker:
    """Stands in for the compile service and the producer: records what was compiled, and serves
    delivery reports (failing the first ``fail_sends`` records) once ``open`` is set."""

    fail_sends: int = 0
    fail_offsets: set[int] = field(default_factory=set)
    compiling: asyncio.Event | None = None  # when set: each compile waits for it (a slow compile)
    outputs_per_request: int = 1
    compiled: list[tuple[int, int]] = field(default_factory=list)
    delivered: list[bytes] = field(default_factory=list)
    open: threading.Event = field(default_factory=threading.Event)
    _pending: list[tuple[bytes, Report]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.open.set()

    async def answer(self, message: RequestMessage, emit: Emit) -> object:
        if message.offset in self.fail_offsets:
            msg = f"compile failed on offset {message.offset}"
            raise ValueError(msg)
        if self.compiling is not None:
            await self.compiling.wait()
        self.compiled.append((message.partition, message.offset))
        for _ in range(self.outputs_per_request):
            emit(Output("engram.context.compiled", message.key, message.value or b""))
        return None

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Report) -> None:
        with self._lock:
            self._pending.append((value, report))

    def serve_reports(self, timeout_s: float) -> int:
        if not self.open.wait(timeout_s):
            return len(self._pending)
        with self._lock:
            pending, self._pending = self._pending, []
        for value, report in pending:
            ok = self.fail_sends <= 0
            self.fail_sends -= 1
            if ok:
                self.delivered.append(value)
            report(ok)
        return 0


def answerer(broker: Broker) -> ContextAnswerer:
    return ContextAnswerer(broker.answer, broker)


def test_ledger_claims_once_and_settles_everything_up_to_an_offset() -> None:
    async def scenario() -> None:
        ledger = RequestLedger()
        assert ledger.claim(0, 5) is not None
        assert ledger.claim(0, 5) is None, "a claimed request is not claimed twice"
        assert ledger.claim(1, 5) is not None, "partitions are independent"
        assert ledger.claim(0, 7) is not None
        ledger.settle(0, 6)
        assert ledger.claimed(0, 5) is None, "settled claims are dropped"
        assert ledger.claimed(0, 7) is not None, "claims after the settled offset stay"
        assert ledger.claim(0, 3) is None, "an offset below the settled one is answered for good"
        ledger.forget([0])
        assert ledger.claim(0, 3) is not None, "a revoked partition starts afresh"

    asyncio.run(scenario())


def test_fetched_requests_are_not_answered_again_by_the_faust_path() -> None:
    broker = Broker(outputs_per_request=2)
    paths = answerer(broker)
    batch = [request(0, 0), request(0, 1), request(2, 0)]

    async def scenario() -> None:
        await paths.answer_fetched(batch)
        await paths.answer_acked(batch)
        await paths.drained()  # the delivery reports' task ends with the test

    asyncio.run(scenario())
    assert broker.compiled == [(0, 0), (0, 1), (2, 0)]
    assert sorted(broker.delivered) == sorted([b"0:0", b"0:1", b"2:0"] * 2)
    assert paths.in_flight == 0


def test_the_faust_path_answers_what_the_fetcher_missed_and_the_fetcher_skips_it_later() -> None:
    broker = Broker()
    paths = answerer(broker)

    async def scenario() -> None:
        await paths.answer_fetched([request(0, 1)])  # the fetcher started after offset 0
        await paths.answer_acked([request(0, 0), request(0, 1), request(0, 2)])
        await paths.answer_fetched([request(0, 2), request(0, 3)])  # offset 2 arrives late here
        await paths.answer_acked([request(0, 3)])
        await paths.drained()  # the delivery reports' task ends with the test

    asyncio.run(scenario())
    assert broker.compiled == [(0, 1), (0, 0), (0, 2), (0, 3)]
    assert sorted(broker.delivered) == [b"0:0", b"0:1", b"0:2", b"0:3"]


def test_a_failed_fetcher_delivery_is_answered_again_before_the_ack() -> None:
    broker = Broker(fail_sends=2)
    paths = answerer(broker)
    batch = [request(1, 10), request(1, 11)]

    async def scenario() -> None:
        await paths.answer_fetched(batch)
        await paths.answer_acked(batch)
        await paths.drained()  # the delivery reports' task ends with the test

    asyncio.run(scenario())
    assert broker.compiled == [(1, 10), (1, 11), (1, 10), (1, 11)]
    assert sorted(broker.delivered) == [b"1:10", b"1:11"]


def test_the_faust_path_gives_up_loudly_when_nothing_is_delivered() -> None:
    broker = Broker(fail_sends=100)
    paths = answerer(broker)

    async def scenario() -> None:
        with pytest.raises(DeliveryError, match="not delivered after 2 attempts"):
            await paths.answer_acked([request(0, 0)])
        await paths.drained()  # the delivery reports' task ends with the test

    asyncio.run(scenario())
    assert broker.delivered == []


def test_the_faust_path_waits_for_an_answer_in_flight() -> None:
    broker = Broker()
    broker.open.clear()
    order: list[str] = []
    paths = answerer(broker)

    async def scenario() -> None:
        await paths.answer_fetched([request(0, 0)])
        acking = asyncio.create_task(paths.answer_acked([request(0, 0)]))
        await asyncio.sleep(0.1)
        assert not acking.done(), "no ack before the broker acknowledged the context"
        order.append("broker acknowledges")
        broker.open.set()
        await acking
        order.append("acknowledged")
        await paths.drained()  # the delivery reports' task ends with the test

    asyncio.run(scenario())
    assert order == ["broker acknowledges", "acknowledged"]
    assert broker.compiled == [(0, 0)]
    assert broker.delivered == [b"0:0"]


def test_an_answer_error_fails_the_faust_path_loudly_not_silently() -> None:
    broker = Broker(fail_offsets={4})
    paths = answerer(broker)
    batch = [request(0, 3), request(0, 4)]

    async def scenario() -> None:
        await paths.answer_fetched(batch)  # the fetcher logs it and leaves it to the Faust path
        with pytest.raises(ValueError, match="offset 4"):
            await paths.answer_acked(batch)
        answered = paths.ledger.claimed(0, 3)
        assert answered is not None and await answered, "the other request of the batch is delivered"
        await paths.drained()

    asyncio.run(scenario())
    assert broker.delivered == [b"0:3"]


def test_a_fetched_request_whose_compile_is_cancelled_is_answered_by_the_faust_path() -> None:
    broker = Broker()
    paths = answerer(broker)
    batch = [request(0, 0), request(0, 1)]

    async def scenario() -> None:
        broker.compiling = asyncio.Event()
        fetching = asyncio.create_task(paths.answer_fetched(batch))
        await asyncio.sleep(0.05)  # the fetch path claimed both and awaits the first compile
        assert paths.ledger.claimed(0, 0) is not None and paths.ledger.claimed(0, 1) is not None
        fetching.cancel()  # the worker stops the fetch task mid-compile
        with pytest.raises(asyncio.CancelledError):
            await fetching
        broker.compiling.set()
        await asyncio.wait_for(paths.answer_acked(batch), 5.0)
        await paths.drained()

    asyncio.run(scenario())
    assert broker.compiled == [(0, 0), (0, 1)], "each answered once, by the Faust path"
    assert sorted(broker.delivered) == [b"0:0", b"0:1"]
