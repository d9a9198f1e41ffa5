"""The request path answers each fetched batch in order, sends each reply at once, and commits the
batch in the one commit order: requests logged, every record delivered, SLB states written, and
only then the reader's offsets. No broker here: the compile and the producer's delivery reports
are stood in for; the event log is the real one."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from engram.schemas.record import RawRecord, Record
from engram.sinks.eventlog.reader import EventLogReader
from engram.sinks.eventlog.sink import EventLogSink
from engram.streams.agents.answering import Answer, Deliveries, RequestPath
from engram.streams.agents.requests import Fetched
from engram.streams.commit import CommitError, CommitTargets, Output, TableWrite
from engram.streams.repairs.unfinished import BatchGuard
from tests.streams.flow import Armed, ListTable

TOPIC = "t.engram.context.requests"
Report = Callable[[bool], None]


def request(partition: int, offset: int) -> RawRecord:
    return Record(TOPIC, partition, offset, 0, b"user", f"{partition}:{offset}".encode())


@dataclass
class Broker:
    """Stands in for the compile service and the producer: records what was compiled and sent,
    and serves delivery reports (failing the first ``fail_sends`` records) once ``open`` is set."""

    table: ListTable
    fail_sends: int = 0
    events: list[str] = field(default_factory=list)  # what happened, in order
    open: threading.Event = field(default_factory=threading.Event)
    _pending: list[tuple[bytes, Report]] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.open.set()

    async def answer(self, record: RawRecord, _received_s: float) -> Answer:
        self.events.append(f"compile {record.partition}:{record.offset}")
        reply = Output("engram.context.compiled", record.key, record.value or b"")
        access = Output("engram.memory", record.key, b"accessed " + (record.value or b""))
        return Answer([reply, access], [TableWrite(self.table, record.partition, f"slb-{record.offset}", {"n": 1})])

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Report) -> None:
        self.events.append(f"send {value.decode()}")
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
            self.events.append(f"{'delivered' if ok else 'failed'} {value.decode()}")
            report(ok)
        return 0


@dataclass
class Run:
    broker: Broker
    path: RequestPath
    log: EventLogSink
    committed: list[dict[int, int]]


def request_path(tmp_path: Path, fail_sends: int = 0) -> Run:
    table = ListTable([], Armed())
    broker = Broker(table, fail_sends=fail_sends)
    log = EventLogSink(tmp_path / "log")
    log.setup()
    committed: list[dict[int, int]] = []

    async def acknowledge(offsets: dict[int, int]) -> None:
        broker.events.append(f"commit {sorted(offsets.items())}")
        committed.append(offsets)

    path = RequestPath(broker.answer, Deliveries(broker), CommitTargets(log), acknowledge)
    return Run(broker, path, log, committed)


def test_a_batch_is_answered_in_order_and_committed_after_every_delivery(tmp_path: Path) -> None:
    run = request_path(tmp_path)
    fetched = Fetched([request(0, 5), request(1, 2), request(0, 6)], received_s=0.0)
    with run.log:
        asyncio.run(run.path.handle(fetched))
    events = run.broker.events
    compiles = [e for e in events if e.startswith("compile")]
    assert compiles == ["compile 0:5", "compile 1:2", "compile 0:6"]
    # Each reply is sent as soon as its request is compiled, before the next compile.
    assert events.index("send 0:5") < events.index("compile 1:2")
    # The offsets commit last, once every record was delivered: each partition's last offset + 1.
    assert events[-1] == "commit [(0, 7), (1, 3)]"
    assert all(events.index(f"delivered {v}") < len(events) - 1 for v in ("0:5", "1:2", "0:6"))
    assert run.committed == [{0: 7, 1: 3}]
    assert set(run.broker.table.data) == {"slb-5", "slb-2", "slb-6"}
    logged = EventLogReader(tmp_path / "log").read([TOPIC])
    assert sorted((e["partition"], e["offset"]) for e in logged) == [(0, 5), (0, 6), (1, 2)], "requests logged"


def test_a_record_the_broker_did_not_acknowledge_fails_the_commit_before_state_and_offsets(tmp_path: Path) -> None:
    run = request_path(tmp_path, fail_sends=1)
    with run.log, pytest.raises(CommitError) as caught:
        asyncio.run(run.path.handle(Fetched([request(0, 0), request(0, 1)], received_s=0.0)))
    assert caught.value.stage == "produce"
    assert run.committed == [], "nothing acknowledged: the batch is answered again after the restart"
    assert run.broker.table.data == {}, "no SLB state written for a batch that did not get through"


def test_deliveries_wait_for_the_broker(tmp_path: Path) -> None:
    broker = Broker(ListTable([], Armed()))
    broker.open.clear()

    async def send_then_release() -> list[bool]:
        deliveries = Deliveries(broker)
        futures = [deliveries.send(Output("t", None, b"a")), deliveries.send(Output("t", None, b"b"))]
        await asyncio.sleep(0.1)
        assert not any(f.done() for f in futures), "no report before the broker answers"
        broker.open.set()
        results = list(await asyncio.gather(*futures))
        await deliveries.drained()
        return results

    assert asyncio.run(send_then_release()) == [True, True]


def test_answering_goes_on_while_a_commit_waits_and_waiting_batches_commit_together(tmp_path: Path) -> None:
    run = request_path(tmp_path)
    run.broker.open.clear()  # the broker holds its acknowledgements: the first commit waits

    async def scenario() -> None:
        fetches: asyncio.Queue[Fetched] = asyncio.Queue()
        serving = asyncio.create_task(run.path.run(fetches, BatchGuard("test")))
        fetches.put_nowait(Fetched([request(0, 0)], received_s=0.0))
        await asyncio.sleep(0.1)
        fetches.put_nowait(Fetched([request(0, 1)], received_s=0.0))
        fetches.put_nowait(Fetched([request(1, 0)], received_s=0.0))
        await asyncio.sleep(0.1)
        assert [e for e in run.broker.events if e.startswith("compile")] == [
            "compile 0:0",
            "compile 0:1",
            "compile 1:0",
        ]
        assert run.committed == [], "nothing committed while the broker has acknowledged nothing"
        run.broker.open.set()
        deadline = asyncio.get_running_loop().time() + 5
        while sum(len(c) for c in run.committed) < 2 and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.02)
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        await run.path.deliveries.drained()

    with run.log:
        asyncio.run(scenario())
    # The first batch alone (its commit began before the others were answered), then the rest as one.
    assert run.committed == [{0: 1}, {0: 2, 1: 1}]
