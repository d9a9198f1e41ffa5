"""What is left of a user after erasure, in process: ``erasure_residual_items`` (goal 0).

The trust bench's memory (its users' nodes, as MemoryEvents keyed by user) goes into the stores a
worker keeps in process and into a sealed event log; then one user is erased as a worker erases
(a `SubjectErased` MemoryEvent applied by the view and the graph engine, the user's log key
deleted: streams/agents/erasure.py). Counted as residual:
- nodes of the user the view or the graph engine still holds (processors/trust/erasure.py's rule);
- items of the user's memory in the user's compiled contexts afterwards;
- records of the user the event log still yields, read with the keys that remain.
``others_unchanged``: every other sampled user's compiled contexts are the same before and after.
(The Qdrant and graph sinks apply the same event; tests/sinks and the erasure e2e cover them.)
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.view import MemoryView
from engram.processors.trust.erasure import erased_by
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event
from engram.schemas.record import Record
from engram.schemas.records import SUBJECT_ERASED, ContextRequest, EventRef, MemoryEvent, SubjectErased
from engram.sinks.eventlog import EventLogReader, EventLogSink, KeyStore, SealingPolicy, erase_subject

MEMORY = "engram.memory"
Ranked = Callable[[ContextRequest], list[tuple[str, float]]]


def erasure_of(user: str, time_ms: int) -> MemoryEvent:
    change: SubjectErased = {"user_id": user, "reason": "bench", "requested_by": None}
    ref: EventRef = {"topic": "engram.erasures", "partition": 0, "offset": 0}
    return memory_event(user, time_ms, [ref], SUBJECT_ERASED, change)


def log_residual(events: Sequence[MemoryEvent], user: str) -> int:
    """Records keyed by ``user`` a sealed log still yields once the user's key is deleted."""
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    with tempfile.TemporaryDirectory(prefix="engram-bench-erasure-") as tmp:
        keys = KeyStore(Path(tmp) / "keys")
        keys.setup()
        sink = EventLogSink(Path(tmp) / "log", sealing=SealingPolicy(lambda _t, k: k.decode() if k else None, keys))
        sink.setup()
        for offset, event in enumerate(events):
            sink.add(Record(MEMORY, 0, offset, event["event_time_ms"], event["key"].encode(), codec.encode(event)))
        sink.flush()
        sink.close()
        erase_subject(keys, user)
        reader = EventLogReader(Path(tmp) / "log", keys)
        return sum(1 for e in reader.read([MEMORY]) if e["key"] == user.encode())


def measure(
    events: Sequence[MemoryEvent], new_view: Callable[[], MemoryView], compile_on: Callable[[MemoryView], Ranked],
    asked: dict[str, list[ContextRequest]],
) -> dict[str, Any]:  # fmt: skip
    """Erase the first user of ``asked``; the others' contexts are compared before and after."""
    user, *others = asked
    view = new_view()
    view.apply(events)
    ranked = compile_on(view)
    before = {u: [ranked(r) for r in asked[u]] for u in others}
    erasure = erasure_of(user, max(e["event_time_ms"] for e in events) + 1)
    view.apply([erasure])
    engine = GraphEngine()
    engine.apply([*events, erasure])
    store = engine.store
    owned = [(r.kind, r.user_id) for r in view.records()] + [(s.kind, s.user_id) for s in view.stubs().values()]
    in_view = sum(erased_by(kind, owner, user) for kind, owner in owned)
    owner = store.users.get(user)
    in_graph = sum(
        1 for r in range(len(store))
        if store.alive[r] and owner is not None and int(store.owner.values[r]) == owner
        and erased_by(store.kinds[r], user, user)
    )  # fmt: skip
    served = sum(
        1 for r in asked[user] for node_id, _ in ranked(r)
        if (record := view.node(node_id)) is not None and record.user_id == user
    )  # fmt: skip
    in_log = log_residual(events, user)
    after = {u: [ranked(r) for r in asked[u]] for u in others}
    return {
        "erasure_residual_items": in_view + in_graph + served + in_log,
        "erasure_residual": {"view": in_view, "graph_engine": in_graph, "contexts": served, "event_log": in_log},
        "erased_user_nodes": sum(e["key"] == user for e in events),
        "others_unchanged": before == after,
    }
