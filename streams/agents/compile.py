"""Compile agent: engram.context.requests → CompiledContext on engram.context.compiled.

The hot path runs in process (ARCHITECTURE.md, "State"): a `MemoryView` of the worker's users,
fed on the event loop by the store agent (`ContextService.observe`) and, for the memory partitions
other workers own, by the memory follower (`ContextService.follow`, streams/follow.py), both
through one per-partition watermark (`AppliedOffsets`), and the pure
`ContextCompiler` (router, SLB, retrieval, PPR, knapsack, topological order). The SLB's buffers
live in a Faust table keyed by (session, authorization set); each buffer touched by a request is
written back at the request's partition, and loaded from the table when this worker has not
seen the key since it started.

Requests arrive by two paths (streams/agents/requests.py): a low-latency fetcher that answers
first, and the Faust agent that acknowledges each request only once its context was delivered
(answering itself whatever the fetcher did not). Each path answers a whole fetched batch; the
delivery of each record is tracked by its delivery report (streams/agents/answering.py), so no
path waits for a producer flush between requests.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

from processors.compiler import ContextCompiler
from processors.facts import facts_block
from processors.intake import Accepted, Rejected, admit, dead_letter
from processors.rebac import slb_key
from processors.retrieval.applied import AppliedOffsets, OffsetEvent
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
from streams.agents.answering import ContextAnswerer, Emit, Output
from streams.agents.ingest import write_state
from streams.agents.requests import RequestFetcher, RequestMessage
from streams.agents.unfinished import BatchGuard
from streams.follow import MemoryFollower, ViewCatchUp, register_follower
from streams.gaps import GapRepair
from streams.heap import HeapFreezer
from streams.metrics import EngramMetrics
from streams.output import EventProducer
from streams.steps import FactsStep, facts_state

# The Faust path takes what its consumer fetched in one go; it mostly waits on the fetcher's
# answers, so a long window would only hold acknowledgements back.
FAUST_BATCH_MAX = 200
FAUST_WITHIN_S = 0.05

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
    heap: HeapFreezer = field(default_factory=HeapFreezer)  # the view, out of full GC passes
    applied: AppliedOffsets = field(default_factory=AppliedOffsets)  # the view's memory offsets
    catch_up: ViewCatchUp | None = None  # reads back what the view is behind on (streams/follow.py)

    async def observe(self, records: Sequence[OffsetEvent]) -> None:
        """Feed memory this worker's store agent stored to the view (on the loop), after any
        offsets the view is behind on where the batch begins (a partition taken over from the
        follower), read back by `ViewCatchUp`."""
        earlier = await self.catch_up.read(self.applied.behind(records)) if self.catch_up is not None else []
        self._absorb([*earlier, *records])

    def follow(self, records: Sequence[OffsetEvent]) -> None:
        """Feed memory of partitions other workers own to the view (on the loop)."""
        self.metrics.view_followed.inc(self._absorb(records))

    def _absorb(self, records: Sequence[OffsetEvent]) -> int:
        """Apply the records above the view's watermarks and age the SLB (on the loop, serialized
        with compiles); returns how many were applied."""
        events = self.applied.admit(records)
        if not events:
            return 0
        self.view.apply(events)
        self.heap.note_size(len(self.view))
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
        return len(events)

    def _load_slb(self, request: ContextRequest) -> str:
        key = slb_key(request["session_id"], request["authorized_layers"])
        if key not in self.slb.buffers and self.slb_table is not None:
            stored = self.slb_table.get(key)
            if stored is not None:
                self.slb.buffers[key] = LookasideBuffer.from_state(stored, self.slb.config)
        return key

    def answer(self, message: RequestMessage, emit: Emit) -> CompiledContext | None:
        """Compile one request and emit its records to be produced: the compiled context (first),
        the FactAccessed of its facts block, or the request's dead letter. The caller tracks their
        delivery. Returns None for a request that was dead-lettered."""
        verdict = admit(self.request_codec, "ContextRequest", message.value)
        if not isinstance(verdict, Accepted):
            self._reject(message, verdict, emit)
            return None
        try:
            return self._compile(message, verdict.record, emit)
        except Exception as exc:  # dead-lettered with the reason: one bad request never stops the path
            reason = f"compile failed: {type(exc).__name__}: {exc}"
            self._reject(message, Rejected("processing", reason, type(exc).__name__), emit)
            return None

    def _reject(self, message: RequestMessage, verdict: Rejected, emit: Emit) -> None:
        letter = dead_letter(
            verdict, message.topic, message.partition, message.offset, message.key, message.value, stage="compile"
        )
        emit(Output(self.deadletter_topic, message.key, self.deadletter_codec.encode(letter)))
        self.metrics.deadletters.labels(message.topic, verdict.reason_class).inc()

    def _compile(self, message: RequestMessage, request: ContextRequest, emit: Emit) -> CompiledContext:
        started = time.perf_counter()
        waited_ms = (time.monotonic() - message.received_s) * 1000.0 if message.received_s else None
        key = self._load_slb(request)
        ref: EventRef = {"topic": message.topic, "partition": message.partition, "offset": message.offset}
        facts, accesses = self.facts_block(request, ref) if self.facts_block is not None else (None, [])
        compiled = self.compiler.compile(request, facts_block=facts)
        if waited_ms is not None:  # in the worker before its compile began: queueing behind others
            compiled["timings_ms"]["wait"] = waited_ms
        emit(Output(self.compiled_topic, request["user_id"].encode(), self.compiled_codec.encode(compiled)))
        for access in accesses:
            emit(Output(self.memory_topic, access["key"].encode(), self.memory_codec.encode(access)))
        buffer = self.slb.buffers.get(key)
        # Persisted when a miss inserted a neighbourhood; a hit only refreshes LRU recency, which a
        # restarted worker can afford to lose, and re-serializing the buffer per request is costly.
        if self.slb_table is not None and buffer is not None and not compiled["cache_hit"]:
            write_state(self.slb_table, message.partition, key, buffer.to_state())
        self.metrics.compile_seconds.observe(time.perf_counter() - started)
        self.metrics.context_requests.labels(compiled["route"]).inc()
        self.metrics.slb_lookups.labels("hit" if compiled["cache_hit"] else "miss").inc()
        return compiled


def register_compile_agent(
    app: Any,
    topic: Any,
    topic_name: str,
    service: ContextService,
    fetcher: RequestFetcher | None,
    gaps: GapRepair | None = None,
    follower: tuple[MemoryFollower, int] | None = None,
) -> Any:
    """The Faust agent (guaranteed path) and, when given, the low-latency fetcher following it, and
    the memory follower with engram.memory's partition count."""
    answerer = ContextAnswerer(service.answer, service.producer)
    guard = BatchGuard("engram.compile")

    async def compile_contexts(stream: Any) -> None:
        service.heap.note_size(len(service.view))  # the view rebuilt from the event log at start
        async for events in stream.take_events(FAUST_BATCH_MAX, within=FAUST_WITHIN_S):
            async with guard:  # answers it cannot deliver stop the worker unacknowledged
                # Requests Faust skipped are read back and answered too (streams/gaps.py).
                batch = events if gaps is None else await gaps.complete(events)
                await answerer.answer_acked([RequestMessage.of_faust(e.message) for e in batch])

    agent = app.agent(topic, name="engram.compile")(compile_contexts)
    if fetcher is not None:
        register_fetcher(app, topic_name, fetcher, answerer)
    if follower is not None:
        reader, partitions = follower
        followed = service.metrics.view_followed_partitions.set
        register_follower(
            app, service.memory_topic, partitions, reader, service.follow, service.applied.next_offset, followed
        )
    return agent


def register_fetcher(app: Any, topic_name: str, fetcher: RequestFetcher, answerer: ContextAnswerer) -> None:
    """Run the fetcher while the worker runs, assigned to the request partitions Faust assigns here."""
    held: set[int] = set()

    async def on_assigned(_app: Any, assigned: Any, **_kwargs: Any) -> None:
        held.clear()
        held.update(tp.partition for tp in assigned if tp.topic == topic_name)
        fetcher.assign(held)

    async def on_revoked(_app: Any, revoked: Any, **_kwargs: Any) -> None:
        gone = {tp.partition for tp in revoked if tp.topic == topic_name}
        held.difference_update(gone)
        fetcher.assign(held)
        answerer.ledger.forget(gone)

    async def fetch_requests() -> None:
        loop = asyncio.get_running_loop()
        queue: asyncio.Queue[list[RequestMessage]] = asyncio.Queue()

        def deliver(batch: list[RequestMessage]) -> None:
            # Called on the fetch thread; the Faust path answers anything lost at shutdown.
            with contextlib.suppress(RuntimeError):  # the loop closed: the worker is stopping
                loop.call_soon_threadsafe(queue.put_nowait, batch)

        fetcher.start(deliver)
        try:
            await answerer.serve_fetched(queue)
        finally:
            await asyncio.to_thread(fetcher.stop)

    app.on_partitions_assigned.connect(on_assigned)
    app.on_partitions_revoked.connect(on_revoked)
    app.task(fetch_requests)
