"""SLB staleness through the worker's compile path: ``stale_hits`` across a dream and a restart (goal 0).

One LoCoMo conversation is one user's memory, fed to a `ContextService` (the worker's compile
path) as its memory agent would; its questions are one session's requests, answered by that
service, with the SLB writes it returns applied to an in-memory table (what a restarted worker
reads back). A hit is *stale* when the entry that served it holds a node that went dormant after
the entry was filled (the archive's rules bypassed), or when the entry is older than
``max_age_events`` memory events of its user; ages are counted here, apart from the SLB's own
epoch. Phases, each asking the first K/2 questions (all stay cached):

1. ``fill``: asked twice (misses fill the buffer, repeats hit);
2. ``dream``: a NodeDormant for the best node of every other cached entry, then asked again;
3. ``restart``: a new service over the same table, its view restored as a snapshot would (applied
   directly, not counted as new memory), asked again;
4. ``aged``: ``max_age_events`` + 1 new memory events of the user, then asked again: every entry
   filled before them has expired, so no hit may come from one.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engram.benchmarks.slb_memory import Conversation
from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import slb_key, viewer_of
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import LookasideBuffer, LookasideTable, SlbConfig, SlbEntry
from engram.processors.tokens import default_token_counter
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_dormant, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import NODE_DORMANT, NODE_UPSERTED, CompiledContext, ContextRequest, MemoryEvent
from engram.streams.agents.compile import ContextService
from engram.streams.commit import MemoryTable
from engram.streams.metrics import EngramMetrics

SESSION = "slb-staleness"
REQUESTS: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
CONTEXTS: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")


@dataclass
class Fill:
    age: int  # the user's memory events counted when the entry was filled
    dormant: frozenset[str]  # its nodes already dormant then (an archive match may hold one)


@dataclass
class Staleness:
    conv: Conversation
    embedder: Embedder
    config: SlbConfig
    table: MemoryTable = field(default_factory=MemoryTable)
    age: int = 0  # the user's memory events fed so far: the truth the SLB's epoch must follow
    offset: int = 0
    asked: int = 0
    fills: dict[int, Fill] = field(default_factory=dict)
    running: ContextService | None = None

    @property
    def service(self) -> ContextService:
        if self.running is None:
            msg = "start the service first"
            raise RuntimeError(msg)
        return self.running

    def start(self, memory: Sequence[MemoryEvent]) -> ContextService:
        """A worker start over the kept table; ``memory`` is what its view holds already."""
        if self.running is not None:
            self.running.close()
        view = MemoryView(embedder=self.embedder, token_counter=default_token_counter())
        view.apply(memory)
        slb = LookasideTable(self.config)
        compiler = ContextCompiler(view, self.embedder, default_token_counter(), BALANCED, slb=slb)
        self.running = ContextService(view, compiler, slb, _NoSend(), "compiled", "memory", "deadletter",
                                      EngramMetrics(), slb_table=self.table)  # fmt: skip
        return self.running

    def feed(self, events: Sequence[MemoryEvent]) -> None:
        """New memory, as the store agent hands it to the compile path."""
        records = [Record("memory", 0, self.offset + i, 0, self.conv.user.encode(), e) for i, e in enumerate(events)]
        self.offset += len(events)
        self.age += len(events)
        asyncio.run(self.service.observe(records))

    def ask_all(self) -> dict[str, int]:
        out = {"requests": 0, "hits": 0, "stale_hits": 0}
        for question, _ in self.conv.questions[: self.config.capacity // 2]:  # all stay cached: no LRU eviction
            hit, stale = self.ask(question)
            out["requests"] += 1
            out["hits"] += hit
            out["stale_hits"] += stale
        return out

    def ask(self, question: str) -> tuple[bool, bool]:
        """One request through the service: whether it hit, and whether the hit was stale."""
        self.asked += 1
        request: ContextRequest = {
            "request_id": f"q{self.asked}", "user_id": self.conv.user, "session_id": SESSION, "query": question,
            "token_budget": 400, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
            "event_time_ms": 0, "token": None,
        }  # fmt: skip
        record = Record("requests", 0, self.asked, 0, self.conv.user.encode(), REQUESTS.encode(request))
        answer = asyncio.run(self.service.answer(record))
        for write in answer.writes:
            write.table.write(write.partition, write.key, write.state)
        hit = bool(CONTEXTS.decode(answer.outputs[0].value)["cache_hit"])
        buffer = self.buffer()
        if buffer is None or not buffer.entries:
            return hit, False
        if not hit:
            newest = max(buffer.entries, key=lambda e: e.entry_id)
            if newest.entry_id not in self.fills:
                self.fills[newest.entry_id] = Fill(self.age, self.dormant(newest.node_ids))
            return False, False
        return True, self.stale(max(buffer.entries, key=lambda e: e.last_used))

    def buffer(self) -> LookasideBuffer | None:
        key = slb_key(viewer_of(self.conv.user, None), SESSION, ["USER"])
        return self.service.slb.buffers.get(key)

    def dormant(self, node_ids: Sequence[str]) -> frozenset[str]:
        return frozenset(n for n in node_ids if self.service.view.is_dormant(n))

    def stale(self, served: SlbEntry) -> bool:
        fill = self.fills[served.entry_id]
        expired = self.age - fill.age > self.config.max_age_events
        return expired or bool(self.dormant(served.node_ids) - fill.dormant)

    def dream(self) -> list[MemoryEvent]:
        """NodeDormant for the best cached node of every other entry (what a dream archives)."""
        buffer = self.buffer()
        entries = sorted(buffer.entries, key=lambda e: e.entry_id)[::2] if buffer is not None else []
        chosen = sorted({e.node_ids[0] for e in entries if e.node_ids})
        change = [node_dormant(n, "slb staleness bench: a dream archived it") for n in chosen]
        return [memory_event(self.conv.user, 0, [], NODE_DORMANT, c) for c in change]


class _NoSend:
    """The compile path's producer: nothing is sent here (the bench reads what would be)."""

    def send_reported(self, topic: str, key: bytes | None, value: bytes, report: Callable[[bool], None]) -> None:
        raise AssertionError(topic)

    def serve_reports(self, timeout_s: float) -> int:
        return 0


def aging(conv: Conversation, count: int) -> list[MemoryEvent]:
    """``count`` new memory events of the user (short notes, unrelated to the questions)."""
    out = []
    for i in range(count):
        node = node_upserted(f"slb-aging-{i}", "turn", "USER", 10**9 + i, text=f"aging note {i}", user_id=conv.user)
        out.append(memory_event(conv.user, 10**9 + i, [], NODE_UPSERTED, node))
    return out


def measure(conv: Conversation, embedder: Embedder, config: SlbConfig) -> dict[str, object]:
    """``stale_hits`` over the four phases, and each phase's requests, hits and stale hits."""
    run = Staleness(conv, embedder, config)
    try:
        run.start([])
        run.feed(conv.events)
        phases = {"fill": _merged(run.ask_all(), run.ask_all())}
        dreamt = run.dream()
        run.feed(dreamt)
        phases["dream"] = {**run.ask_all(), "made_dormant": len(dreamt)}
        run.start([*conv.events, *dreamt])
        phases["restart"] = run.ask_all()
        run.feed(aging(conv, config.max_age_events + 1))
        phases["aged"] = run.ask_all()
    finally:
        if run.running is not None:
            run.running.close()
    return {"stale_hits": sum(p["stale_hits"] for p in phases.values()), "staleness": phases}


def _merged(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {k: a[k] + b[k] for k in a}
