"""A batch's compiles are queued together: the compile thread does not wait for the loop between them.

In process, no broker: a batch of requests goes through the worker's `RequestPath` into its
`ContextService`. Every request of the batch is started (its compile queued on the compile thread)
before the first reply is sent, and the replies still go out in the requests' order, each once its
own compile is done; a request that fails is dead-lettered in its place without holding the others.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.slb import SLB_DEFAULT, LookasideTable
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import ContextRequest
from engram.streams.agents.answering import Deliveries, RequestPath
from engram.streams.agents.compile import ContextService, _Compiling
from engram.streams.agents.requests import Fetched
from engram.streams.commit import CommitTargets
from engram.streams.metrics import EngramMetrics
from tests.compiler.memory import T0, USER, counter, embedder, request
from tests.streams.test_compile_slow_store import CONTEXT_CODEC, REQUEST_CODEC, DeliveringProducer, garden

QUESTIONS = ("What did we plant first?", "What happened to the garden?", "When did we plan it?", "Any flood?")


class Recorder(DeliveringProducer):
    """The producer, noting when each reply is handed to it against when each compile was queued."""

    def __init__(self, events: list[str]) -> None:
        super().__init__()
        self.events = events

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Callable[[bool], None]) -> None:
        if topic == "compiled":
            self.events.append(f"send {CONTEXT_CODEC.decode(value)['request_id']}")
        super().send_reported(topic, key, value, report)


@dataclass
class NotingService(ContextService):
    """The worker's service, noting each request as its compile is queued."""

    events: list[str] = field(default_factory=list)

    def _queue_compile(self, record: RawRecord, request: ContextRequest, received_s: float) -> _Compiling:
        self.events.append(f"queue {record.offset}")
        return super()._queue_compile(record, request, received_s)


def service_and_path(events: list[str]) -> tuple[ContextService, RequestPath, Recorder]:
    view = garden().view()
    slb = LookasideTable(SLB_DEFAULT)
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=slb)
    producer = Recorder(events)
    service = NotingService(
        view, compiler, slb, producer, "compiled", "memory", "deadletter", EngramMetrics(), events=events
    )

    async def acknowledge(_offsets: dict[int, int]) -> None:
        return None

    return service, RequestPath(service.start, Deliveries(producer), CommitTargets(), acknowledge), producer


def batch(values: list[bytes]) -> Fetched:
    records: list[RawRecord] = [Record("requests", 0, i, T0, USER.encode(), v) for i, v in enumerate(values)]
    return Fetched(records, time.monotonic())


def test_every_compile_of_a_batch_is_queued_before_its_first_reply_and_replies_keep_their_order() -> None:
    events: list[str] = []
    service, path, producer = service_and_path(events)
    asks = [request(q, 400, session_id=f"s{i}") for i, q in enumerate(QUESTIONS)]
    try:
        asyncio.run(path.handle(batch([REQUEST_CODEC.encode(a) for a in asks])))
    finally:
        service.close()
    first_send = next(i for i, e in enumerate(events) if e.startswith("send"))
    assert events[:first_send] == [f"queue {i}" for i in range(len(asks))]
    assert [e for e in events if e.startswith("send")] == [f"send {a['request_id']}" for a in asks]
    assert len(producer.sent["compiled"]) == len(asks)


def test_a_request_that_cannot_be_read_is_dead_lettered_in_its_place_and_the_others_answered() -> None:
    events: list[str] = []
    service, path, producer = service_and_path(events)
    asks = [request(q, 400, session_id=f"s{i}") for i, q in enumerate(QUESTIONS[:2])]
    values = [REQUEST_CODEC.encode(asks[0]), b"not an avro request", REQUEST_CODEC.encode(asks[1])]
    try:
        asyncio.run(path.handle(batch(values)))
    finally:
        service.close()
    assert [e for e in events if e.startswith("send")] == [f"send {a['request_id']}" for a in asks]
    assert len(producer.sent["deadletter"]) == 1
