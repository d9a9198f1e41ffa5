"""The one commit order (streams/commit.py), in process: each failure branch, then whole flows
with crash markers between and inside every stage, compared with a clean run.

The flows are the worker's own agents (`Ingestor` over turns, `MemoryApplier` over engram.memory
with the facts step), on list sources and list sinks (tests/streams/flow.py) and the real event
log. After any crash the run must end with what a clean run ends with: the same event log (each
record once), the same store rows, every derived record delivered (a redelivered batch may send
one again, byte-identical), and the same table states.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from engram.processors.facts.read import facts_block
from engram.processors.retrieval.applied import AppliedOffsets
from engram.processors.trace.builder import TraceBuilder
from engram.schemas.codec import AvroCodec
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import FACT_DECIDED, ConversationTurn, DeadLetter, EventRef, MemoryEvent
from engram.sinks.base import BatchingSink, SinkBatch, SinkConfig, SinkTransientError
from engram.streams.agents.ingest import Ingestor, KeyedSteps, MemoryOutputs
from engram.streams.agents.stores import MemoryApplier
from engram.streams.commit import Batch, CommitError, CommitTargets, OutagePolicy, Output, TableWrite, commit_batch
from engram.streams.edge import Admission
from engram.streams.metrics import EngramMetrics
from engram.streams.runner import metric_value
from engram.streams.steps import FactsStep, TraceStep, facts_state
from tests.streams.flow import (
    Armed,
    CrashAt,
    Durable,
    FailingEventLog,
    FlowRun,
    ListProducer,
    ListStore,
    ListTable,
    Worker,
    run_flow,
)

TURNS, MEMORY, DEAD = "t.engram.turns", "t.engram.memory", "t.engram.deadletter"
TURN_CODEC: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
MEMORY_CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
DEAD_CODEC: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
T0 = 1_767_225_600_000
SAID = {
    "ada": ["I work at Meta.", "I'm working on the payments migration.", "I have a dog.", "I love sushi."],
    "bo": ["I live in Lisbon.", "I am going to Paris next week.", "I like hiking.", "My cat is called Tom."],
}


def turn(user: str, index: int, text: str) -> ConversationTurn:
    return {
        "turn_id": f"{user}-{index}",
        "user_id": user,
        "agent_id": None,
        "flow_id": None,
        "session_id": f"{user}-s",
        "turn_index": index,
        "role": "user",
        "content": text,
        "event_time_ms": T0 + index * 60_000,
        "layer": "USER",
        "causal_parent_ids": [],
        "tool_calls": [],
        "metadata": {},
    }


def turn_records() -> list[RawRecord]:
    """Both users' turns interleaved, one partition each, and one undecodable message."""
    records: list[RawRecord] = []
    offsets = {"ada": 0, "bo": 0}
    for index in range(4):
        for partition, user in enumerate(("ada", "bo")):
            value = TURN_CODEC.encode(turn(user, index, SAID[user][index]))
            records.append(Record(TURNS, partition, offsets[user], T0, user.encode(), value))
            offsets[user] += 1
    records.insert(3, Record(TURNS, 0, 99, T0, b"ada", b"\x00garbage"))
    return records


def metrics_and_admission(schema: str, stage: str, codec: Any) -> tuple[EngramMetrics, Admission[Any]]:
    metrics = EngramMetrics()
    return metrics, Admission(codec, schema, stage, DEAD, DEAD_CODEC, metrics)


def start_ingest(durable: Durable[Any], armed: Armed) -> Worker:
    metrics, admission = metrics_and_admission("ConversationTurn", "ingest", TURN_CODEC)
    table = ListTable(durable.changelogs.setdefault("trace", []), armed)
    steps = KeyedSteps([(TraceStep(TraceBuilder()), table)], admission, MemoryOutputs(MEMORY, MEMORY_CODEC, metrics))
    eventlog = FailingEventLog(durable.eventlog_dir, armed)
    eventlog.setup()
    targets = CommitTargets(eventlog=eventlog, producer=ListProducer(durable.delivered, armed), metrics=metrics)
    return Worker(armed, targets, {"trace": table}, Ingestor(admission, steps, metrics).ingest)


class View:
    """The compile path's view as an observer: rebuilt from the event log at each start, fed
    each applied batch through one watermark per partition (as the worker's view is)."""

    def __init__(self, durable: Durable[Any]) -> None:
        self.applied = AppliedOffsets()
        self.events: list[str] = []
        logged = [
            Record(t, p, o, 0, None, MEMORY_CODEC.decode(v or b"")) for t, p, o, v in durable.logged() if t == MEMORY
        ]
        self.events.extend(e["event_id"] for e in self.applied.admit(logged))

    async def observe(self, records: Sequence[Record[MemoryEvent]]) -> None:
        fresh = self.applied.admit(records)
        self.events.extend(e["event_id"] for e in fresh)


def start_memory(durable: Durable[Any], armed: Armed, views: list[View]) -> Worker:
    metrics, admission = metrics_and_admission("MemoryEvent", "sink", MEMORY_CODEC)
    table = ListTable(durable.changelogs.setdefault("facts", []), armed)
    facts = KeyedSteps([(FactsStep(), table)], admission, MemoryOutputs(MEMORY, MEMORY_CODEC, metrics))
    eventlog = FailingEventLog(durable.eventlog_dir, armed)
    eventlog.setup()
    view = View(durable)
    views.append(view)
    targets = CommitTargets(
        eventlog=eventlog,
        stores=[("rows", ListStore(durable.rows, armed, lambda e: str(e["event_id"])))],
        observers=[view.observe],
        producer=ListProducer(durable.delivered, armed),
        metrics=metrics,
    )
    return Worker(armed, targets, {"facts": table}, MemoryApplier(admission, facts).apply)


def delivered_memory(durable: Durable[Any]) -> list[Record[bytes | None]]:
    """engram.memory as the broker holds it after a clean ingest, one partition per user."""
    out: list[Record[bytes | None]] = []
    offsets: dict[bytes, int] = {}
    for topic, key, value in durable.delivered:
        if topic == MEMORY and key is not None:
            partition = 0 if key == b"ada" else 1
            out.append(Record(MEMORY, partition, offsets.setdefault(key, 0), T0, key, value))
            offsets[key] += 1
    return out


def clean_ingest(tmp_path: Path) -> FlowRun:
    return run_flow(turn_records(), start_ingest, Durable(tmp_path / "clean-ingest"), batch_size=3)


def with_markers(records: Sequence[RawRecord], markers: dict[int, CrashAt]) -> list[RawRecord | CrashAt]:
    out: list[RawRecord | CrashAt] = []
    for index, record in enumerate(records):
        if index in markers:
            out.append(markers[index])
        out.append(record)
    return out


def table_states(durable: Durable[Any], name: str) -> dict[str, Any]:
    return ListTable(durable.changelogs.get(name, []), Armed()).data


def assert_same_outcome(run: FlowRun, clean: FlowRun) -> None:
    assert run.durable.logged() == clean.durable.logged(), "the event log holds each record once"
    assert run.durable.rows == clean.durable.rows, "the store holds what a clean run stores"
    assert set(run.durable.delivered) == set(clean.durable.delivered), "every derived record is delivered"
    for name in clean.durable.changelogs:
        assert table_states(run.durable, name) == table_states(clean.durable, name), name


# --- commit_batch, branch by branch ---------------------------------------------------------


class Recording:
    """Targets that record the order they are reached in, and fail where told."""

    def __init__(self, fail: str | None = None) -> None:
        self.calls: list[str] = []
        self.fail = fail

    def reach(self, stage: str) -> None:
        self.calls.append(stage)
        if stage == self.fail:
            msg = f"{stage} is down"
            raise OSError(msg)


def recording_targets(rec: Recording, tmp_path: Path) -> tuple[CommitTargets, ListTable, FailingEventLog]:
    class Log(FailingEventLog):
        def flush(self) -> dict[tuple[str, int], int]:
            rec.reach("eventlog")
            return super().flush()

    class Store(ListStore):
        def write(self, batch: Any) -> None:
            rec.reach("stores")
            super().write(batch)

    class Producer(ListProducer):
        async def flush(self) -> None:
            rec.reach("produce")
            await super().flush()

    class Table(ListTable):
        def write(self, partition: int, key: str, state: Any) -> None:
            rec.reach("state")
            super().write(partition, key, state)

    async def observe(_records: Sequence[Record[MemoryEvent]]) -> None:
        rec.reach("observers")

    armed = Armed()
    log = Log(tmp_path / "log", armed)
    log.setup()
    store = Store({}, armed, lambda e: str(e["event_id"]))
    targets = CommitTargets(log, [("rows", store)], [observe], Producer([], armed))
    return targets, Table([], armed), log


def one_batch(table: ListTable) -> Batch:
    event = MEMORY_CODEC.decode(delivered_memory_fixture()[0].value or b"")
    return Batch(
        archive=[Record(TURNS, 0, 0, T0, b"ada", b"raw")],
        stored=[Record(MEMORY, 0, 0, T0, b"ada", event)],
        outputs=[Output(MEMORY, b"ada", b"derived")],
        writes=[TableWrite(table, 0, "ada", {"n": 1})],
    )


def delivered_memory_fixture() -> list[Record[bytes | None]]:
    events = TraceStep(TraceBuilder()).process({}, {"ada": [Record(TURNS, 0, 0, T0, b"ada", turn("ada", 0, "Hi."))]})[1]
    return [Record(MEMORY, 0, i, T0, b"ada", MEMORY_CODEC.encode(e)) for i, e in enumerate(events)]


def test_a_batch_commits_in_the_one_order(tmp_path: Path) -> None:
    rec = Recording()
    targets, table, log = recording_targets(rec, tmp_path)
    with log:
        timings = asyncio.run(commit_batch(one_batch(table), targets))
    assert rec.calls == ["eventlog", "stores", "observers", "produce", "state"]
    assert set(timings) == {"eventlog", "store:rows", "observers", "produce", "state"}
    assert table.data == {"ada": {"n": 1}}


@pytest.mark.parametrize(
    ("fail", "reached"),
    [
        ("eventlog", ["eventlog"]),
        ("stores", ["eventlog", "stores"]),
        ("observers", ["eventlog", "stores", "observers"]),
        ("produce", ["eventlog", "stores", "observers", "produce"]),
        ("state", ["eventlog", "stores", "observers", "produce", "state"]),
    ],
)
def test_a_failed_stage_stops_every_later_one(tmp_path: Path, fail: str, reached: list[str]) -> None:
    rec = Recording(fail)
    targets, table, log = recording_targets(rec, tmp_path)
    with log, pytest.raises(CommitError) as caught:
        asyncio.run(commit_batch(one_batch(table), targets))
    assert rec.calls == reached
    assert caught.value.stage == ("stores" if fail == "observers" else fail)
    assert "is down" in str(caught.value)
    assert table.data == {}, "no state is written for a batch that did not get through"


def test_a_batch_with_outputs_and_no_producer_is_a_wiring_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no producer"):
        asyncio.run(commit_batch(Batch(outputs=[Output(MEMORY, None, b"x")]), CommitTargets()))


# --- admission -------------------------------------------------------------------------------


def test_admission_decodes_each_record_once_and_dead_letters_the_rest() -> None:
    metrics, admission = metrics_and_admission("ConversationTurn", "ingest", TURN_CODEC)
    records = turn_records()
    admitted = admission.admit(records)
    assert [r.value["turn_id"] for r in admitted.accepted][:3] == ["ada-0", "bo-0", "ada-1"]
    assert len(admitted.accepted) == len(records) - 1
    [dead] = admitted.dead
    letter = DEAD_CODEC.decode(dead.value)
    assert (dead.topic, dead.key) == (DEAD, b"ada")
    assert (letter["topic"], letter["partition"], letter["offset"], letter["stage"]) == (TURNS, 0, 99, "ingest")
    assert letter["value"] == b"\x00garbage" and letter["reason"]
    text = metrics.exposition().decode()
    received = metric_value(text, "engram_received_messages_total", {"topic": TURNS})
    assert received == metric_value(text, "engram_decoded_messages_total", {"topic": TURNS}) == len(records)
    assert metric_value(text, "engram_deadletter_messages_total", {"topic": TURNS}) == 1
    assert admitted.raw_of(admitted.accepted[:1]) == [records[0]]


# --- whole flows with crash markers ------------------------------------------------------------


INGEST_CRASHES = [
    CrashAt("eventlog"),
    CrashAt("produce"),
    CrashAt("produce", partial=True),
    CrashAt("state"),
    CrashAt("state", partial=True),
]


@pytest.mark.parametrize("crash", INGEST_CRASHES, ids=lambda c: f"{c.stage}{'-partial' if c.partial else ''}")
def test_ingest_survives_a_crash_at_each_stage(tmp_path: Path, crash: CrashAt) -> None:
    clean = clean_ingest(tmp_path)
    assert clean.crashes == [] and clean.starts == 1
    run = run_flow(with_markers(turn_records(), {4: crash}), start_ingest, Durable(tmp_path / "crashing"), batch_size=3)
    assert run.crashes == [crash.stage], "the marker's stage failed, and only it"
    assert run.starts == 2
    assert_same_outcome(run, clean)


def test_ingest_survives_a_crash_in_every_batch(tmp_path: Path) -> None:
    clean = clean_ingest(tmp_path)
    markers = dict(zip((0, 3, 5, 7, 8), INGEST_CRASHES, strict=True))
    run = run_flow(with_markers(turn_records(), markers), start_ingest, Durable(tmp_path / "crashing"), batch_size=3)
    assert sorted(run.crashes) == sorted(c.stage for c in INGEST_CRASHES)
    assert_same_outcome(run, clean)
    dead = [DEAD_CODEC.decode(v) for t, _, v in run.durable.delivered if t == DEAD]
    assert {(d["topic"], d["offset"]) for d in dead} == {(TURNS, 99)}, "the bad input is dead-lettered, not lost"


def memory_inputs(tmp_path: Path) -> list[RawRecord]:
    """engram.memory after a clean ingest, plus three reads of Ada's facts block (FactAccessed)."""
    memory = delivered_memory(clean_ingest(tmp_path).durable)
    states = run_flow(memory, lambda d, a: start_memory(d, a, []), Durable(tmp_path / "facts"), batch_size=50)
    ada = facts_state(table_states(states.durable, "facts")["ada"], "ada")[0]
    offset = sum(1 for r in memory if r.partition == 0)
    for read in range(3):
        request: EventRef = {"topic": "t.engram.context.requests", "partition": 0, "offset": read}
        _, access = facts_block(ada, "ada", request_id=f"q{read}", event_time_ms=T0 + 10**7, sources=[request])
        assert access is not None
        memory.append(Record(MEMORY, 0, offset + read, T0, b"ada", MEMORY_CODEC.encode(access)))
    return memory


MEMORY_CRASHES = [
    CrashAt("eventlog"),
    CrashAt("stores"),
    CrashAt("stores", partial=True),
    CrashAt("produce", partial=True),
    CrashAt("state"),
]


def test_memory_and_facts_survive_a_crash_at_each_stage_and_replay_the_same_promotions(tmp_path: Path) -> None:
    inputs = memory_inputs(tmp_path)
    clean_views: list[View] = []
    clean = run_flow(inputs, lambda d, a: start_memory(d, a, clean_views), Durable(tmp_path / "clean"), 8)
    promoted = [
        MEMORY_CODEC.decode(v)["change"][1]
        for t, _, v in clean.durable.delivered
        if t == MEMORY and MEMORY_CODEC.decode(v)["change"][0] == FACT_DECIDED
    ]
    assert any(d.get("rule") == "promote-by-access" for d in promoted), "three reads promote the short-term fact"

    # One marker per batch of 8: each lands in a batch with something for its stage to apply.
    markers = dict(zip((1, 25, 17, 9, len(inputs) - 1), MEMORY_CRASHES, strict=True))
    views: list[View] = []
    run = run_flow(with_markers(inputs, markers), lambda d, a: start_memory(d, a, views), Durable(tmp_path / "run"), 8)
    assert sorted(run.crashes) == sorted(c.stage for c in MEMORY_CRASHES)
    assert_same_outcome(run, clean)
    assert sorted(views[-1].events) == sorted(clean_views[-1].events), "the view ends with every event once"

    # A replay of the same engram.memory into fresh state decides the same, promotions included.
    replay = run_flow(inputs, lambda d, a: start_memory(d, a, []), Durable(tmp_path / "replay"), batch_size=7)
    assert replay.durable.delivered == clean.durable.delivered
    assert table_states(replay.durable, "facts") == table_states(clean.durable, "facts")


def test_a_sink_retry_moves_the_retries_metric(tmp_path: Path) -> None:
    """A store that fails once with a transient error is retried; engram_sink_retries_total counts it."""
    from engram.sinks.base import BatchingSink, SinkTransientError

    class Flaky(BatchingSink[MemoryEvent]):
        def __init__(self) -> None:
            super().__init__(sleep=lambda _: None)
            self.failed = False
            self.written: list[int] = []

        def write(self, batch: SinkBatch[MemoryEvent]) -> None:
            if not self.failed:
                self.failed = True
                msg = "connection reset"
                raise SinkTransientError(msg)
            self.written.extend(r.offset for r in batch)

    metrics = EngramMetrics()
    sink = Flaky()
    stored = [Record("engram.memory", 0, i, 0, b"u", cast(MemoryEvent, {})) for i in range(3)]
    asyncio.run(commit_batch(Batch(stored=stored), CommitTargets(stores=[("flaky", sink)], metrics=metrics)))
    assert sink.written == [0, 1, 2]
    exposition = metrics.exposition().decode()
    assert metric_value(exposition, "engram_sink_retries_total", {"sink": "flaky"}) == 1
    assert metric_value(exposition, "engram_sink_applied_total", {"sink": "flaky"}) == 3


class Outage(BatchingSink[MemoryEvent]):
    """A store down for ``down_s`` seconds: every write fails (the sink's own retries exhaust at once)."""

    def __init__(self, down_s: float) -> None:
        super().__init__(SinkConfig(max_retries=0), sleep=lambda _: None)
        self.until = time.monotonic() + down_s
        self.applied: Counter[int] = Counter()

    def write(self, batch: SinkBatch[MemoryEvent]) -> None:
        if time.monotonic() < self.until:
            msg = "connection refused"
            raise SinkTransientError(msg)
        self.applied.update(r.offset for r in batch)


def _stored(n: int) -> list[Record[MemoryEvent]]:
    return [Record("engram.memory", i % 2, i, 0, b"u", cast(MemoryEvent, {})) for i in range(n)]


def test_a_store_outage_within_the_limit_holds_the_batch_and_applies_it_once() -> None:
    metrics, sink = EngramMetrics(), Outage(down_s=0.6)
    policy = OutagePolicy(limit_s=10.0, backoff_initial_s=0.05, backoff_max_s=0.2)
    targets = CommitTargets(stores=[("qdrant", sink)], metrics=metrics, outage=policy)
    started = time.monotonic()
    asyncio.run(commit_batch(Batch(stored=_stored(6)), targets))
    assert time.monotonic() - started >= 0.6  # held through the outage, not failed
    assert sink.applied == Counter(range(6))  # every event once
    assert metric_value(metrics.exposition().decode(), "engram_store_up", {"sink": "qdrant"}) == 1


def test_an_outage_past_the_limit_stops_the_commit_unacknowledged() -> None:
    sink = Outage(down_s=60.0)
    policy = OutagePolicy(limit_s=0.3, backoff_initial_s=0.05, backoff_max_s=0.1)
    acknowledged: list[bool] = []

    async def acknowledge() -> None:
        acknowledged.append(True)

    with pytest.raises(CommitError, match="stores"):
        asyncio.run(commit_batch(Batch(stored=_stored(3)), CommitTargets(stores=[("graph", sink)], outage=policy),
                                 acknowledge))  # fmt: skip
    assert not acknowledged and not sink.applied
