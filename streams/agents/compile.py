"""Compile agent: engram.context.requests → CompiledContext on engram.context.compiled.

The hot path runs in process (ARCHITECTURE.md, "State"): a `MemoryView` of the worker's users,
fed on the event loop by the store agent (`ContextService.observe`), and the pure
`ContextCompiler` (router, SLB, retrieval, PPR, knapsack, topological order). The SLB's buffers
live in a Faust table keyed by (session, authorization set); each buffer touched by a request is
written back at the request's partition, and loaded from the table when this worker has not
seen the key since it started.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from processors.compiler import ContextCompiler
from processors.facts import facts_block
from processors.intake import Accepted, admit, dead_letter
from processors.rebac import slb_key
from processors.retrieval.view import MemoryView
from processors.slb import LookasideBuffer, LookasideTable
from schemas.codec import AvroCodec
from schemas.records import (
    NODE_REMOVED,
    CompiledContext,
    ContextRequest,
    EventRef,
    FactAccessed,
    MemoryEvent,
)
from streams.agents.ingest import write_state
from streams.metrics import EngramMetrics
from streams.output import EventProducer
from streams.steps import FactsStep, facts_state

FactsBlock = Callable[[ContextRequest, EventRef], "tuple[tuple[str, list[EventRef]] | None, list[MemoryEvent]]"]


@dataclass
class FactsReader:
    """The user's facts block for a request (it competes for budget like any item). Its provenance
    is the source events of the facts it shows; the read is journaled as an access."""

    table: Any  # the facts Faust table, read only here
    view: MemoryView
    step: FactsStep

    def __call__(
        self, request: ContextRequest, ref: EventRef
    ) -> tuple[tuple[str, list[EventRef]] | None, list[MemoryEvent]]:
        data = self.table.get(request["user_id"])
        if not data:
            return None, []
        text, access = facts_block(
            facts_state(data, request["user_id"])[0],
            request["user_id"],
            request_id=request["request_id"],
            event_time_ms=request["event_time_ms"],
            sources=[ref],
        )
        if not text or access is None:
            return None, []
        accessed = cast(FactAccessed, access["change"][1])
        self.step.note_access(accessed, request["event_time_ms"], ref)
        refs: dict[tuple[str, int, int], EventRef] = {}
        for fact_id in accessed["fact_ids"]:
            node = self.view.node(fact_id)
            for src in node.provenance if node is not None else ():
                refs.setdefault((src["topic"], src["partition"], src["offset"]), src)
        return (text, [refs[k] for k in sorted(refs)]), [access]


@dataclass
class ContextService:
    view: MemoryView
    compiler: ContextCompiler
    slb: LookasideTable
    producer: EventProducer
    compiled_topic: str
    memory_topic: str
    deadletter_topic: str
    metrics: EngramMetrics
    slb_table: Any = None
    facts_block: FactsBlock | None = None
    request_codec: Any = field(default_factory=lambda: AvroCodec("ContextRequest"))
    compiled_codec: Any = field(default_factory=lambda: AvroCodec("CompiledContext"))
    memory_codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: Any = field(default_factory=lambda: AvroCodec("DeadLetter"))

    def observe(self, events: Sequence[MemoryEvent]) -> None:
        """Feed newly stored memory to the view and age the SLB (on the loop, serialized with compiles)."""
        self.view.apply(events)
        per_user: dict[str, int] = {}
        removed: list[str] = []
        for event in events:
            per_user[event["key"]] = per_user.get(event["key"], 0) + 1
            kind, change = event["change"]
            if kind == NODE_REMOVED:
                removed.append(str(dict(change)["node_id"]))
        for user, count in per_user.items():
            self.slb.note_memory_events(user, count)
        if removed:
            self.slb.remove_nodes(removed)

    def _load_slb(self, request: ContextRequest) -> str:
        key = slb_key(request["session_id"], request["authorized_layers"])
        if key not in self.slb.buffers and self.slb_table is not None:
            stored = self.slb_table.get(key)
            if stored is not None:
                self.slb.buffers[key] = LookasideBuffer.from_state(stored, self.slb.config)
        return key

    def answer(self, message: Any) -> CompiledContext | None:
        verdict = admit(self.request_codec, "ContextRequest", message.value)
        if not isinstance(verdict, Accepted):
            letter = dead_letter(
                verdict, message.topic, message.partition, message.offset, message.key, message.value, stage="compile"
            )
            self.producer.send(self.deadletter_topic, message.key, self.deadletter_codec.encode(letter))
            self.metrics.deadletters.labels(message.topic, verdict.reason_class).inc()
            return None
        request: ContextRequest = verdict.record
        started = time.perf_counter()
        key = self._load_slb(request)
        ref: EventRef = {"topic": message.topic, "partition": message.partition, "offset": message.offset}
        facts, accesses = self.facts_block(request, ref) if self.facts_block is not None else (None, [])
        compiled = self.compiler.compile(request, facts_block=facts)
        self.producer.send(self.compiled_topic, request["user_id"].encode(), self.compiled_codec.encode(compiled))
        for access in accesses:
            self.producer.send(self.memory_topic, access["key"].encode(), self.memory_codec.encode(access))
        buffer = self.slb.buffers.get(key)
        # Persisted when a miss inserted a neighbourhood; a hit only refreshes LRU recency, which a
        # restarted worker can afford to lose, and re-serializing the buffer per request is costly.
        if self.slb_table is not None and buffer is not None and not compiled["cache_hit"]:
            write_state(self.slb_table, message.partition, key, buffer.to_state())
        self.metrics.compile_seconds.observe(time.perf_counter() - started)
        self.metrics.context_requests.labels(compiled["route"]).inc()
        self.metrics.slb_lookups.labels("hit" if compiled["cache_hit"] else "miss").inc()
        return compiled


def register_compile_agent(app: Any, topic: Any, service: ContextService) -> Any:
    async def compile_contexts(stream: Any) -> None:
        # One request at a time: latency matters more than batching here, and a compile is a few ms.
        async for event in stream.events():
            service.answer(event.message)
            await service.producer.flush()

    return app.agent(topic, name="engram.compile")(compile_contexts)
