"""The compile path: engram.context.requests → CompiledContext on engram.context.compiled.

One component with one feed and one answer path. The hot path runs in process (ARCHITECTURE.md,
"State"): a `MemoryView` of this worker's users plus the shared memory, fed by the memory agent
(`ContextService.observe`: engram.memory, this worker's partitions) and by the follower of the
replica topic (`ContextService.follow`, streams/follow.py), each through its topic's watermarks
(`AppliedOffsets`), and the pure `ContextCompiler` (router, SLB, retrieval, PPR, knapsack,
topological order). The SLB's buffers live in a Faust table keyed by (user, session, authorization set);
each buffer a request inserted into is written back at the request's partition, and loaded from
the table when this worker has not seen the key since it started.

Requests come by one path: the `RequestReader` (streams/agents/requests.py), assigned the request
partitions numbered like the memory partitions Faust assigns here, hands each poll to the
`RequestPath` (streams/agents/answering.py), which answers and commits it in the one commit order.

The loop never waits on a compile. Every compile runs on ONE dedicated compile thread (a
single-worker executor) that the loop awaits. Its blocking I/O (System 2's Cypher reads, the LLM
router, a remote embedder: streams/stores.py) runs on the compile path's `BlockingCalls` pool
(sinks/deadline.py) and is waited for at most a share of what is left of the request's budget
(``bounds.timeout_ms``, set per compile by `BlockingCalls.within`), so a slow or absent store costs
a request that store's answer (named in ``fallbacks``) and never stalls the worker's other agents.
- Why one thread, not a lock: the view and the SLB are plain objects a compile reads throughout.
  Every change to them (`observe`, `follow`) runs on the same thread, so changes and compiles are
  serialized in the order they were submitted, with no lock to hold across a compile's waits.
- What stays on the loop: the Faust tables (the SLB state is read before a compile and written
  after it; `FactsReader` reads the facts table and looks up single nodes in the view, dict reads
  that are atomic under the GIL), the view's offsets (`AppliedOffsets`), and producing.
- The hop's cost, measured here on 2 shared cores (load 2-4): a bare await of a no-op on a
  one-thread executor, p50 0.11-0.13 ms; `answer` over a 300-node view, alternating per request
  with the same work run inline on the loop (the old path), p50 +0.14 to +0.95 ms on 10-12 ms
  (SLB misses), the compile itself no slower on its thread: the rest is waking the threads.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from functools import cached_property, partial
from typing import Any, Final, TypeVar

from faust.types import AppT

from engram.processors.compiler import ContextCompiler
from engram.processors.compiler.accessed import changes_search, context_accesses
from engram.processors.facts import UserFacts, facts_block
from engram.processors.graph.engine import GraphEngine
from engram.processors.intake import Rejected
from engram.processors.rebac import slb_key, slb_user_prefix, viewer_of
from engram.processors.retrieval.applied import AppliedOffsets
from engram.processors.retrieval.digest import view_content_hash
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import LookasideBuffer, LookasideTable, epoch_key
from engram.processors.trust.authorize import Gate
from engram.processors.trust.refusals import refused_context
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_reawakened
from engram.schemas.record import RawRecord, Record
from engram.schemas.records import (
    NODE_REAWAKENED,
    NODE_REMOVED,
    SUBJECT_ERASED,
    CompiledContext,
    ContextRequest,
    EventRef,
    FactAccessed,
    MemoryEvent,
    SubjectErased,
)
from engram.sinks.deadline import BlockingCalls
from engram.sinks.eventlog import KeyStore, erase_subject
from engram.sinks.qdrant.hybrid_index import HybridIndex
from engram.sinks.viewstate import SnapshotWriter, ViewState
from engram.streams.agents.answering import Answer, Deliveries, ReportingProducer, RequestPath, serve_path
from engram.streams.agents.authorized import authorize, refusal_replies
from engram.streams.agents.requests import RequestReader
from engram.streams.commit import CommitTargets, JsonState, Output, StateTable, TableWrite
from engram.streams.delivery import ReplyTopics
from engram.streams.edge import Admission
from engram.streams.follow import MemoryFollower, ViewCatchUp, register_follower
from engram.streams.heap import HeapFreezer
from engram.streams.metrics import EngramMetrics, cpu_of
from engram.streams.priority import ReadPriority
from engram.streams.steps import facts_state

logger = logging.getLogger(__name__)
T = TypeVar("T")

APPLY_CHUNK: Final = 256
"""The most memory events one job on the compile thread applies to the view. A memory batch is up to
``ENGRAM_BATCH_MAX`` records (2,000): about 230 ms of view work in one job (`engram bench ingest`:
the view's 694 us of CPU a turn over its 6.0 memory events), and a compile submitted meanwhile
waited for all of it; in chunks of this size (about 30 ms each) it waits for one at most. A
compile may then see part of a batch applied, as it may see any batch boundary: the events apply
in their order either way."""

FactsBlock = Callable[[ContextRequest, EventRef], "tuple[tuple[str, list[EventRef]] | None, list[MemoryEvent]]"]


@dataclass
class FactsReader:
    """The user's facts block for a request (it competes for budget like any item). Its provenance
    is the source events of the facts it shows. Its FactAccessed goes to engram.memory with the
    compiled context when the block is in it (processors/compiler/accessed.py), and the facts step
    counts it from there, in offset order (streams/steps.py: FactsStep), so a replay counts it
    again the same way."""

    table: Mapping[str, JsonState]  # the facts table, read only here
    view: MemoryView

    def __call__(
        self, request: ContextRequest, ref: EventRef
    ) -> tuple[tuple[str, list[EventRef]] | None, list[MemoryEvent]]:
        data = self.table.get(request["user_id"])
        if not data:
            return None, []
        text, access = facts_block(
            self._sourced(facts_state(data, request["user_id"])[0]),
            request["user_id"],
            request_id=request["request_id"],
            event_time_ms=request["event_time_ms"],
            sources=[ref],
        )
        accessed = change_as(access, FactAccessed) if access is not None else None
        if not text or access is None or accessed is None:
            return None, []
        refs: dict[tuple[str, int, int], EventRef] = {}
        for fact_id in accessed["fact_ids"]:
            node = self.view.node(fact_id)
            for src in node.provenance if node is not None else ():
                refs.setdefault((src["topic"], src["partition"], src["offset"]), src)
        return (text, [refs[k] for k in sorted(refs)]), [access]

    def _sourced(self, facts: UserFacts) -> UserFacts:
        """The facts whose decisions the view has applied: a fact is shown with its sources, and
        until its FactDecided comes back through engram.memory the view cannot name them."""
        held = {fact_id: fact for fact_id, fact in facts.facts.items() if self.view.node(fact_id) is not None}
        return facts if len(held) == len(facts.facts) else UserFacts(facts.user_id, held)


@dataclass
class ContextService:
    view: MemoryView
    compiler: ContextCompiler
    slb: LookasideTable
    producer: ReportingProducer  # the compile path's own (`EventProducer` in the worker)
    compiled_topic: str
    memory_topic: str
    deadletter_topic: str
    metrics: EngramMetrics
    slb_table: StateTable | None = None
    facts_block: FactsBlock | None = None
    request_codec: Any = field(default_factory=lambda: AvroCodec("ContextRequest"))
    compiled_codec: Any = field(default_factory=lambda: AvroCodec("CompiledContext"))
    memory_codec: Any = field(default_factory=lambda: AvroCodec("MemoryEvent"))
    deadletter_codec: Any = field(default_factory=lambda: AvroCodec("DeadLetter"))
    heap: HeapFreezer = field(default_factory=HeapFreezer)  # the view, out of full GC passes
    applied: AppliedOffsets = field(default_factory=AppliedOffsets)  # the view's engram.memory offsets
    replica_applied: AppliedOffsets = field(default_factory=AppliedOffsets)  # its replica-topic offsets
    catch_up: ViewCatchUp | None = None  # reads back what the view is behind on (streams/follow.py)
    calls: BlockingCalls | None = None  # the compile path's blocking I/O, within each request's budget
    graph: GraphEngine | None = None  # seed 004's queries (streams/agents/graph_queries.py), fed with the view
    gate: Gate = field(default_factory=Gate)  # who may ask for what (processors/trust/authorize.py)
    reply_topics: ReplyTopics | None = None  # answer topics to create on first use (streams/delivery.py)
    keys: KeyStore | None = None  # this worker's event-log keys: an erased user's goes (streams/agents/erasure.py)
    snapshots: SnapshotWriter | None = None  # the view on disk for restarts (sinks/viewstate.py)
    view_store: HybridIndex | None = None  # where the view writes its nodes through (streams/restore.py)
    events_applied: int = 0  # memory events the view has been fed (a loaded snapshot's included)
    _snapshot_queued: bool = field(default=False, init=False, repr=False)
    _thread: ThreadPoolExecutor | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        if self.snapshots is not None:
            self.snapshots.on_written = self._snapshot_written

    def _compile_thread(self) -> ThreadPoolExecutor:
        if self._thread is None:
            self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="engram-compile")
        return self._thread

    async def on_compile_thread(self, work: Callable[[], T]) -> T:
        """Run ``work`` on the compile thread, where the view (and the graph) change and are read."""
        return await asyncio.get_running_loop().run_in_executor(self._compile_thread(), work)

    def close(self) -> None:
        """Stop the compile thread (after the work queued on it) and the blocking-I/O pool, without
        waiting for calls abandoned past their deadline."""
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.shutdown(wait=True)
        if self.snapshots is not None:
            self.snapshots.reap(wait=True)
        if self.view_store is not None:
            self.view_store.close()  # after the compile thread: nothing reads or writes it now
        if self.calls is not None:
            self.calls.close(wait=False)

    async def observe(self, records: Sequence[Record[MemoryEvent]]) -> None:
        """Feed memory this worker's store agent stored to the view, after any offsets the view is
        behind on where the batch begins (a partition newly assigned here: from the view's
        watermark, or from the beginning when it holds nothing of it), read back by `ViewCatchUp`.
        Returns once the view holds them (applied on the compile thread)."""
        behind = self.applied.behind(records, from_start=True)
        earlier = await self.catch_up.read(behind) if self.catch_up is not None else []
        given = [*earlier, *records]
        stored = self._stored_epochs(r.value["key"] for r in given)
        epochs: dict[str, JsonState] = {}
        fed = 0
        for start in range(0, len(given), APPLY_CHUNK):  # compiles queued meanwhile go between chunks
            # Admitted and queued in one step, chunk by chunk: the watermarks never run ahead of
            # the view's jobs (`holdings`, `_fed`'s snapshot read them on the loop).
            events = self.applied.admit(given[start : start + APPLY_CHUNK])
            if events:
                epochs.update(await self.on_compile_thread(partial(self._absorb, events, stored)))
                stored, fed = {}, fed + len(events)
        if fed:
            self._store_epochs(given, epochs)
            self._fed(fed)
        self._drop_erased_buffers(records)

    def _stored_epochs(self, users: Iterable[str]) -> dict[str, JsonState | None]:
        """The epochs a previous run stored, for users this run has not restored yet (read on the loop)."""
        if self.slb_table is None:
            return {}
        return {u: self.slb_table.get(epoch_key(u)) for u in set(users) if self.slb.needs_epoch(u)}

    def _store_epochs(self, records: Sequence[Record[MemoryEvent]], epochs: Mapping[str, JsonState]) -> None:
        """Each user's epoch beside the user's buffers, to the partition of the user's memory."""
        if self.slb_table is None:
            return
        partitions = {r.value["key"]: r.partition for r in records}
        for user, state in epochs.items():
            if user in partitions:
                self.slb_table.write(partitions[user], epoch_key(user), state)

    def _forget(self, user_id: str) -> None:
        """An erasure reaches every worker (it is replicated): each drops the user's SLB buffers and
        deletes the user's key from its own event log's key store, whichever partitions of the user
        it archived before a rebalance (on the compile thread: the key store fsyncs)."""
        self.slb.forget_user(user_id)
        if self.keys is not None:
            erase_subject(self.keys, user_id)
        if self.snapshots is not None:
            self.snapshots.discard()

    def _drop_erased_buffers(self, records: Sequence[Record[MemoryEvent]]) -> None:
        """An erased user's stored SLB buffers (query vectors, node ids) leave the SLB table too."""
        if self.slb_table is None:
            return
        for record in records:
            erased = change_as(record.value, SubjectErased)
            if erased is not None:
                prefix = slb_user_prefix(erased["user_id"])
                for key in [k for k in self.slb_table if k.startswith(prefix)]:
                    self.slb_table.write(record.partition, key, None)

    def follow(self, records: Sequence[Record[MemoryEvent]]) -> None:  # the replica topic's records
        """Feed the shared memory every worker needs, from the replica topic (streams/follow.py), to
        the view (called on the loop; applied on the compile thread before any compile submitted
        later, without the loop waiting)."""
        events = self.replica_applied.admit(records)
        if events:
            self.metrics.view_followed.inc(len(events))
            self._compile_thread().submit(self._absorb, events, {}).add_done_callback(_log_failure)
            self._fed(len(events))

    def _fed(self, count: int) -> None:
        """``count`` more events queued for the view (on the loop). When a snapshot is due, one is
        queued behind them with the offsets they bring the view to, read now: the loop admits
        records and queues their application in one step, so the view holds exactly those offsets
        when the snapshot runs."""
        self.events_applied += count
        writer = self.snapshots
        if writer is None or self._snapshot_queued or not writer.due(self.events_applied):
            return
        self._snapshot_queued = True
        state = partial(self._snapshot, self.applied.snapshot(), self.replica_applied.snapshot(), self.events_applied)
        self._compile_thread().submit(state).add_done_callback(_log_failure)

    def _snapshot(self, memory: dict[int, int], shared: dict[int, int], events: int) -> None:
        """Fork the snapshot's writer (on the compile thread, between two changes of the view)."""
        self._snapshot_queued = False
        if self.snapshots is not None:
            self.snapshots.start(ViewState(self.view, self.graph, memory, shared, events))

    def _snapshot_written(self, seconds: float, size: int) -> None:
        self.metrics.view_snapshots.inc()
        self.metrics.view_snapshot_seconds.inc(seconds)
        self.metrics.view_snapshot_bytes.set(size)

    async def holdings(self, *, digest: bool = False) -> dict[str, Any]:
        """What the view holds, for operators and the compile bench (``/view``): nodes per layer and
        USER-layer nodes per user, counted on the compile thread (where the view changes), and
        ``applied``: per topic (``memory``; ``shared``, the replica), partition → the next offset the
        view would apply (its watermark + 1). The offsets are read on the loop before the count is
        queued: the loop admits records and queues their application in one step, so everything
        they cover is applied before the count runs. ``in_store_only``: the nodes that left RAM for the
        view's store (``live_in_store_only`` of them live: past their user's hot set), and
        ``store_reads`` what searches read back from it. With ``digest``, also the view's content hash
        (`view_content_hash`, as a replay of the log up to ``applied`` gives it)."""
        applied = {"memory": next_offsets(self.applied), "shared": next_offsets(self.replica_applied)}

        def count() -> dict[str, Any]:
            layers: Counter[str] = Counter()
            users: Counter[str] = Counter()
            owned: list[tuple[str, str | None]] = [(r.layer, r.user_id) for r in self.view.records()]
            owned += [(s.layer, s.user_id) for s in self.view.stubs().values()]  # the nodes only in its store
            for layer, user_id in owned:
                layers[layer] += 1
                if layer == "USER" and user_id:
                    users[user_id] += 1
            stubs = self.view.stubs()
            reads, fetches = self.view.store_reads
            held = {"nodes": len(self.view), "layers": dict(layers), "users": dict(users), "applied": applied,
                    "in_store_only": len(stubs), "live_in_store_only": sum(not self.view.is_dormant(n) for n in stubs),
                    "store_reads": {"nodes": reads, "round_trips": fetches}}  # fmt: skip
            return {**held, "digest": view_content_hash(self.view)} if digest else held

        return await self.on_compile_thread(count)

    def _absorb(self, events: Sequence[MemoryEvent], stored: Mapping[str, JsonState | None]) -> dict[str, JsonState]:
        """Apply events the watermarks admitted and age the SLB (on the compile thread, so
        serialized with compiles), after restoring the ``stored`` epochs; returns the epochs of the
        users the events touched, to store (an erased user's is gone, and stays gone)."""
        if self.snapshots is not None:
            self.snapshots.reap()
        for user, state in stored.items():
            self.slb.restore_epoch(user, state)
        with cpu_of(self.metrics.stage_cpu, "view"):
            self._apply(events)
        erased = {str(dict(e["change"][1])["user_id"]) for e in events if e["change"][0] == SUBJECT_ERASED}
        touched = {e["key"] for e in events if changes_search(e)} - erased
        return {u: self.slb.epoch_state(u) for u in sorted(touched) if u in self.slb.epochs}

    def _apply(self, events: Sequence[MemoryEvent]) -> None:
        self.view.apply(events)
        if self.graph is not None:
            self.graph.apply(events)  # after the view: the nodes' vectors are the view's
        self.heap.note_size(len(self.view))
        per_user: dict[str, int] = {}
        removed: list[str] = []
        for event in events:
            if changes_search(event):  # a read does not age the SLB's entries
                per_user[event["key"]] = per_user.get(event["key"], 0) + 1
            kind, change = event["change"]
            if kind == NODE_REMOVED:
                removed.append(str(dict(change)["node_id"]))
            elif kind == SUBJECT_ERASED:
                self._forget(str(dict(change)["user_id"]))
        for user, count in per_user.items():
            self.slb.note_memory_events(user, count)
        if removed:
            self.slb.remove_nodes(removed)

    async def answer(self, record: RawRecord, received_s: float = 0.0) -> Answer:
        """Compile one request (on the compile thread): its records to send, the compiled context
        first (then its access events: processors/compiler/accessed.py), or its dead letter (after
        the refusal's answer, when its requester is known: `refusals`); and the state of its SLB
        buffer to write.
        ``received_s`` is when the worker got it (``time.monotonic()``)."""
        admitted = self.admission.admit([record])
        if not admitted.accepted:
            return Answer([*await self.refusals(admitted.rejected), *admitted.dead])
        gated = authorize(
            self.gate, self.admission, record, admitted.accepted[0].value, "compile", self.request_codec,
            self.compiled_topic,
        )  # fmt: skip
        if gated.request is None:
            told = await self.refusals([gated.verdict] if gated.verdict else [])
            return Answer([*told, *([gated.refusal] if gated.refusal else [])], archived=gated.archived)
        try:
            await self.deliverable(gated.request.get("reply_topic"))
            return replace(await self._compile(record, gated.request, received_s), archived=gated.archived)
        except Exception as exc:  # dead-lettered with the reason: one bad request never stops the path
            reason = f"compile failed: {type(exc).__name__}: {exc}"
            verdict = Rejected("processing", reason, type(exc).__name__)
            letter = self.admission.dead_letter(gated.archived or record, verdict, "compile")
            return Answer([letter], archived=gated.archived)

    async def refusals(self, verdicts: Sequence[Rejected]) -> list[Output]:
        """A refused or invalid request's answer to its known requester (streams/agents/authorized.py)."""

        def reply(request: Mapping[str, Any], code: str, reason: str) -> bytes:
            return bytes(self.compiled_codec.encode(refused_context(request, code, reason)))

        topics = self.compiled_topic
        return await refusal_replies(self.gate, topics, verdicts, "request_id", reply, self.deliverable)

    async def deliverable(self, topic: str | None) -> None:
        """Make sure an answer topic other than the shared ones exists (streams/delivery.py)."""
        if self.reply_topics is not None and topic is not None and topic != self.compiled_topic:
            await self.reply_topics.ensure(topic)

    @cached_property
    def admission(self) -> Admission[ContextRequest]:
        """Requests are decoded once, as every input is (streams/edge.py)."""
        names = (self.request_codec, "ContextRequest", "compile", self.deadletter_topic, self.deadletter_codec)
        return Admission(*names, self.metrics)

    async def _compile(self, record: RawRecord, request: ContextRequest, received_s: float) -> Answer:
        """The tables are read here on the loop before the compile; the SLB write is returned."""
        started = time.perf_counter()
        viewer = viewer_of(request["user_id"], request.get("instances"))
        key = slb_key(viewer, request["session_id"], request["authorized_layers"])
        stored: JsonState | None = self.slb_table.get(key) if self.slb_table is not None else None
        epochs = self._stored_epochs([request["user_id"]])
        facts, accesses = self.facts_block(request, record.ref) if self.facts_block is not None else (None, [])
        shown = [f for a in accesses if (read := change_as(a, FactAccessed)) is not None for f in read["fact_ids"]]
        work = partial(self._compile_here, request, key, stored, facts, received_s, epochs, shown)
        compiled, state, woken, used = await self.on_compile_thread(work)
        reply = request.get("reply_topic") or self.compiled_topic
        outputs = [Output(reply, request["user_id"].encode(), self.compiled_codec.encode(compiled))]
        reads = context_accesses(compiled, request, record.ref, accesses, lambda node_id: used.get(node_id, -1))
        memory = [*reads, *reawakened(request, record.ref, woken)]
        outputs.extend(Output(self.memory_topic, a["key"].encode(), self.memory_codec.encode(a)) for a in memory)
        writes = []
        if self.slb_table is not None and state is not None:
            writes.append(TableWrite(self.slb_table, record.partition, key, state))
        self.metrics.compile_seconds.observe(time.perf_counter() - started)
        self.metrics.context_requests.labels(compiled["route"]).inc()
        self.metrics.budget_use.observe(compiled["total_tokens"] / max(1, compiled["token_budget"]))
        self.metrics.slb_lookups.labels("hit" if compiled["cache_hit"] else "miss").inc()
        return Answer(outputs, writes)

    def _compile_here(
        self,
        request: ContextRequest,
        key: str,
        stored: JsonState | None,
        facts: tuple[str, list[EventRef]] | None,
        received_s: float,
        epochs: Mapping[str, JsonState | None] | None = None,
        shown: Sequence[str] = (),
    ) -> tuple[CompiledContext, JsonState | None, list[str], dict[str, int]]:
        """On the compile thread: the compiled context within the request's budget, the state of
        its SLB buffer to write back (None when nothing needs writing), the dormant nodes the
        context holds (a search that resolved to the archive: they are re-awakened), and the last
        recorded use of each of its items and of the facts its facts block shows (``shown``:
        processors/compiler/accessed.py). ``stored`` is
        the buffer's table state, loaded when this worker has not seen the key since it started;
        ``epochs``: the requester's stored epoch, restored before a restored buffer is looked up."""
        waited_ms = (time.monotonic() - received_s) * 1000.0 if received_s else None
        for user, state in (epochs or {}).items():
            self.slb.restore_epoch(user, state)
        if stored is not None and key not in self.slb.buffers:
            self.slb.buffers[key] = LookasideBuffer.from_state(stored, self.slb.config)
        budget_s = self.compiler.config.bounds.timeout_ms / 1000.0
        with self.calls.within(budget_s) if self.calls is not None else contextlib.nullcontext():
            compiled = self.compiler.compile(request, facts_block=facts)
        if waited_ms is not None:  # in the worker before its compile began: queueing behind others
            compiled["timings_ms"]["wait"] = waited_ms
        woken = [item["node_id"] for item in compiled["items"] if self.view.is_dormant(item["node_id"])]
        if woken:
            compiled["fallbacks"].append(f"re-awakened {len(woken)} archived node(s) the live index missed")
        held = [*(item["node_id"] for item in compiled["items"]), *shown]
        used = {node_id: self.view.last_access_ms(node_id) for node_id in held}
        buffer = self.slb.buffers.get(key)
        # Persisted when a miss inserted a neighbourhood; a hit only refreshes LRU recency, which a
        # restarted worker can afford to lose, and re-serializing the buffer per request is costly.
        if self.slb_table is None or buffer is None or compiled["cache_hit"]:
            return compiled, None, woken, used
        return compiled, buffer.to_state(), woken, used


def reawakened(request: ContextRequest, source: EventRef, node_ids: list[str]) -> list[MemoryEvent]:
    """NodeReawakened for the dormant nodes a compiled context used: they travel through
    engram.memory like every change, so the view, the stores and the dream step all see them."""
    reason = f"matched request {request['request_id']} from the archive (seed 000 §5.3: a cache miss)"
    time_ms = request["event_time_ms"]
    key = request["user_id"]
    return [
        memory_event(key, time_ms, [source], NODE_REAWAKENED, node_reawakened(node_id, reason), request["request_id"])
        for node_id in node_ids
    ]


def next_offsets(applied: AppliedOffsets) -> dict[str, int]:
    """Partition (a JSON key) → the next offset to apply, for each partition with a watermark."""
    return {str(partition): last + 1 for partition, last in sorted(applied.snapshot().items())}


def _log_failure(done: Future[Any]) -> None:
    """A view update submitted without waiting: its failure is logged (the next start rebuilds the
    view from the event log)."""
    if not done.cancelled() and (exc := done.exception()) is not None:
        logger.error("applying memory to the view failed", exc_info=exc)


def register_request_path(
    app: AppT,
    service: ContextService,
    reader: RequestReader,
    targets: CommitTargets,
    memory_topic: str,
    follower: tuple[MemoryFollower, int] | None = None,
    reads: ReadPriority | None = None,
) -> RequestPath:
    """The compile path as one component: the reader, assigned the request partitions numbered
    like the engram.memory partitions Faust assigns here, feeding one `RequestPath`; and, when
    given, the shared-memory follower with the replica topic's partition count, and the write
    steps' `ReadPriority` the path tells of its requests."""
    path = RequestPath(
        service.answer, Deliveries(service.producer), targets,
        lambda offsets: asyncio.to_thread(reader.commit, offsets), reads,
    )  # fmt: skip
    # the view was rebuilt from the event log at start; the compile in progress ends within its budget
    serve_path(app, path, reader, memory_topic, "engram.compile", lambda: service.heap.note_size(len(service.view)),
               service.close)  # fmt: skip
    if follower is not None:
        reader_of_shared, partitions = follower
        followed = service.metrics.view_followed_partitions.set
        register_follower(
            app, partitions, reader_of_shared, service.follow, service.replica_applied.next_offset, followed
        )
    return path
