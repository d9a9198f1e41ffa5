"""Usage that counts, in process (issue 49): a compiled context's nodes and facts are accessed only
as its requester receives them. The compile path sends their access events to engram.memory with
the context; once they come back, the view's nodes hold their access counts. A facts block the
knapsack left out sends no FactAccessed. No broker: a service, its outputs read back."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass, field

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.facts import FactReconciler, UserFacts
from engram.processors.facts.model import CandidateFact
from engram.processors.retrieval.access import ACCESS_COUNT, ACCESS_STEP_MS, LAST_ACCESS_MS
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import SLB_DEFAULT, LookasideTable
from engram.schemas.changes import change_as, kind_of
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import (
    FACT_ACCESSED,
    NODE_UPSERTED,
    CompiledContext,
    ContextRequest,
    FactAccessed,
    MemoryEvent,
    NodesAccessed,
)
from engram.streams.agents.compile import ContextService, FactsReader
from engram.streams.metrics import EngramMetrics
from tests.compiler.memory import counter, embedder
from tests.streams.test_compile_refusals import NoBroker

USER = "ada"
REQUESTS: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
CONTEXTS: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
EVENTS: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


@dataclass
class Worker:
    """The compile path and engram.memory as its view's feed (each event the next offset of partition 0)."""

    service: ContextService
    log: list[MemoryEvent] = field(default_factory=list)

    def observe(self, events: list[MemoryEvent]) -> None:
        self.log.extend(events)
        records: list[Record[MemoryEvent]] = []
        for event in events:
            offset = len(self.log) - len(events) + len(records)
            records.append(Record("memory", 0, offset, event["event_time_ms"], event["key"].encode(), event))
        asyncio.run(self.service.observe(records))

    def ask(self, n: int, budget: int, later_ms: int = 0) -> tuple[CompiledContext, list[MemoryEvent]]:
        """One request (``later_ms`` after the others): the context its requester receives and the
        events sent to engram.memory."""
        request: ContextRequest = {
            "request_id": f"r{n}", "user_id": USER, "session_id": "s", "query": "Where does Ada live?",
            "token_budget": budget, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
            "event_time_ms": 5_000 + n + later_ms, "token": None,
        }  # fmt: skip
        record = Record("requests", 0, n, 0, USER.encode(), REQUESTS.encode(request))
        answer = asyncio.run(self.service.answer(record))
        context = CONTEXTS.decode(answer.outputs[0].value)
        return context, [EVENTS.decode(o.value) for o in answer.outputs[1:] if o.topic == "memory"]


@pytest.fixture
def worker() -> Iterator[Worker]:
    """Ada's turns and one fact, in the view and (the fact) in the facts table."""
    view = MemoryView(embedder=embedder(), token_counter=counter())
    state = UserFacts(USER)
    decided = FactReconciler().reconcile(state, [CandidateFact("user", "lives_in", "Berlin", 0.9)], event_time_ms=1)
    slb = LookasideTable(SLB_DEFAULT)
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=slb)
    made = ContextService(view, compiler, slb, NoBroker(), "compiled", "memory", "deadletter", EngramMetrics(),
                          facts_block=FactsReader({USER: {"facts": state.to_dict(), "applied": {}}}, view))  # fmt: skip
    fed = Worker(made)
    turns = [f"Ada moved to Berlin in spring, note {i}" for i in range(3)]
    turns += [f"Ada's unrelated grocery list, item {i}: oat milk and apples" for i in range(6)]
    nodes = [node_upserted(f"n{i}", "event", "USER", 10 + i, text=t, user_id=USER, session_id="s")
             for i, t in enumerate(turns)]  # fmt: skip
    fed.observe([*(memory_event(USER, 10, [], NODE_UPSERTED, n) for n in nodes), *decided])
    yield fed
    made.close()


def test_the_nodes_of_a_compiled_context_count_an_access_once_its_event_comes_back(worker: Worker) -> None:
    context, sent = worker.ask(1, budget=60)
    assert any(i["kind"] == "facts" for i in context["items"])
    assert [kind_of(e) for e in sent] == [FACT_ACCESSED, "engram.NodesAccessed"]
    fact = change_as(sent[0], FactAccessed)
    accessed = change_as(sent[1], NodesAccessed)
    assert fact is not None and accessed is not None
    nodes = [i["node_id"] for i in context["items"] if i["kind"] != "facts" and i["node_id"] not in fact["fact_ids"]]
    assert nodes and accessed["node_ids"] == nodes  # a fact shown by the block too is accessed once
    worker.observe(sent)
    for node_id in [*nodes, *fact["fact_ids"]]:
        record = worker.service.view.node(node_id)
        assert record is not None and record.properties[ACCESS_COUNT] == "1"
        assert record.properties[LAST_ACCESS_MS] == "5001"
    unused = [r for r in worker.service.view.records() if r.node_id not in {*nodes, *fact["fact_ids"]}]
    assert unused and all(ACCESS_COUNT not in r.properties for r in unused)
    _, within = worker.ask(2, budget=60)  # the same hour: the use is recorded already
    assert [kind_of(e) for e in within] == []
    _, again = worker.ask(3, budget=60, later_ms=ACCESS_STEP_MS)
    worker.observe(again)
    record = worker.service.view.node(nodes[0])
    assert record is not None and record.properties[ACCESS_COUNT] == "2"
    replayed = MemoryView()  # a view rebuilt from the log holds the same use
    replayed.apply(worker.log)
    assert {r.node_id: r.properties for r in replayed.records()} == {
        r.node_id: r.properties for r in worker.service.view.records()
    }


def test_a_facts_block_the_knapsack_left_out_sends_no_fact_access(worker: Worker) -> None:
    context, sent = worker.ask(4, budget=14)
    assert context["items"] and all(i["kind"] != "facts" for i in context["items"])
    assert [kind_of(e) for e in sent] == ["engram.NodesAccessed"]
    accessed = change_as(sent[0], NodesAccessed)
    assert accessed is not None and accessed["node_ids"] == [i["node_id"] for i in context["items"]]
