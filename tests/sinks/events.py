"""Deterministic MemoryEvent streams for the sink tests (built with `schemas.events`).

Embeddings are small random vectors from a seeded numpy RNG: the sinks only store them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engram.processors.embedding.vectors import to_wire
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    memory_event,
    node_dormant,
    node_reawakened,
    node_removed,
    node_upserted,
    stable_id,
)
from engram.schemas.record import Record
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    NODE_UPSERTED,
    SUBJECT_ERASED,
    EventRef,
    FactDecided,
    Layer,
    MemoryEvent,
    SubjectErased,
)

TOPIC = "engram.memory"
T0_MS = 1_700_000_000_000


@dataclass(frozen=True, slots=True)
class Workload:
    users: int = 3
    turns_per_user: int = 20
    concepts_per_user: int = 3
    dim: int = 16
    seed: int = 7


def _ref(offset: int) -> list[EventRef]:
    return [{"topic": "engram.turns", "partition": 0, "offset": offset}]


def _vector(rng: np.random.Generator, dim: int) -> list[float]:
    v = rng.standard_normal(dim).astype(np.float32)
    return [float(x) for x in v / np.linalg.norm(v)]


def _fact(user: str, n: int, decision: str, t_ms: int) -> FactDecided:
    return {
        "fact_id": stable_id("fact", user, n),
        "user_id": user,
        "scope": "user",
        "scope_id": user,
        "subject": user,
        "relation": "likes",
        "value": f"thing {n}",
        "category": "preference",
        "confidence": 0.9,
        "decision": decision,
        "rule": "store-new",
        "reason": "test",
        "horizon": "long",
        "access_count": 0,
        "valid_from_ms": T0_MS,
        "valid_to_ms": t_ms if decision == "retract" else None,
        "recorded_at_ms": t_ms,
        "supersedes": None,
        "source_event_ids": [stable_id("turn", user, n)],
    }


def _turns(user: str, w: Workload, rng: np.random.Generator, concepts: list[str]) -> list[MemoryEvent]:
    """Turn nodes alternating USER/TEAM layers, chained by NEXT, each REF'ing a concept."""
    layers: tuple[Layer, ...] = ("USER", "TEAM")
    out: list[MemoryEvent] = []
    previous: str | None = None
    for t in range(w.turns_per_user):
        t_ms, ref = T0_MS + 1000 * t, _ref(t)
        eid = stable_id("turn", user, t)
        node = node_upserted(
            eid,
            "event",
            layers[t % 2],
            t_ms,
            text=f"turn {t} of {user}",
            tokens=4 + t,
            user_id=user,
            agent_id="agent",
            session_id=f"{user}-s",
            vector=to_wire(_vector(rng, w.dim)),
            properties={"role": "user" if t % 2 == 0 else "assistant"},
        )
        out.append(memory_event(user, t_ms, ref, NODE_UPSERTED, node))
        if previous is not None:
            out.append(memory_event(user, t_ms, ref, EDGE_UPSERTED, edge_upserted("NEXT", previous, eid, "USER")))
        concept = concepts[t % len(concepts)]
        out.append(memory_event(user, t_ms, ref, EDGE_UPSERTED, edge_upserted("REF", eid, concept, "USER", weight=0.5)))
        previous = eid
    return out


def _lifecycle(user: str, w: Workload) -> list[MemoryEvent]:
    """A fact stored then retracted; turn 0 dormant, turn 1 dormant then awake, turn 2 removed,
    the NEXT edge 3 -> 4 removed."""
    turn = [stable_id("turn", user, t) for t in range(5)]
    t_end = T0_MS + 1000 * w.turns_per_user
    ref = _ref(w.turns_per_user)
    return [
        memory_event(user, t_end, ref, FACT_DECIDED, _fact(user, 0, "store", t_end)),
        memory_event(user, t_end + 1, ref, FACT_DECIDED, _fact(user, 0, "retract", t_end + 1)),
        memory_event(user, t_end, ref, NODE_DORMANT, node_dormant(turn[0], "old")),
        memory_event(user, t_end, ref, NODE_DORMANT, node_dormant(turn[1], "old")),
        memory_event(user, t_end, ref, NODE_REAWAKENED, node_reawakened(turn[1], "used")),
        memory_event(user, t_end, ref, NODE_REMOVED, node_removed(turn[2], "event", "pruned")),
        memory_event(user, t_end, ref, EDGE_REMOVED, edge_removed("NEXT", turn[3], turn[4], "test")),
    ]


def conversation(w: Workload = Workload()) -> list[MemoryEvent]:
    """Per user: concept nodes, then `_turns`, then `_lifecycle` (needs 5+ turns per user)."""
    rng = np.random.default_rng(w.seed)
    out: list[MemoryEvent] = []
    for u in range(w.users):
        user = f"user-{u}"
        concepts = [stable_id("concept", user, c) for c in range(w.concepts_per_user)]
        for c, cid in enumerate(concepts):
            vector = _vector(rng, w.dim)
            node = node_upserted(
                cid, "concept", "USER", T0_MS, text=f"concept {c}", user_id=user, vector=to_wire(vector)
            )
            out.append(memory_event(user, T0_MS, _ref(0), NODE_UPSERTED, node))
        out += _turns(user, w, rng, concepts)
        out += _lifecycle(user, w)
    return out


def subject_erased(user: str, t_ms: int, offset: int) -> MemoryEvent:
    """A SubjectErased of ``user`` (``engram forget``); the event's key is the user id."""
    change: SubjectErased = {"user_id": user, "reason": "forget", "requested_by": "test"}
    return memory_event(user, t_ms, _ref(offset), SUBJECT_ERASED, change)


def fresh_content(user: str, tag: str, turns: int, dim: int, seed: int, t_ms: int) -> list[MemoryEvent]:
    """``turns`` new embedded turn nodes of ``user`` (ids and texts carry ``tag``), chained by NEXT."""
    rng = np.random.default_rng(seed)
    ids = [stable_id(tag, user, t) for t in range(turns)]
    out: list[MemoryEvent] = []
    for t, node_id in enumerate(ids):
        text = f"{tag} turn {t} of {user}"
        node = node_upserted(
            node_id, "event", "USER", t_ms + t, text=text, user_id=user, vector=to_wire(_vector(rng, dim))
        )
        out.append(memory_event(user, t_ms + t, _ref(t), NODE_UPSERTED, node))
    for src, dst in zip(ids, ids[1:], strict=False):
        out.append(memory_event(user, t_ms, _ref(0), EDGE_UPSERTED, edge_upserted("NEXT", src, dst, "USER")))
    return out


def as_items(events: list[MemoryEvent], partition: int = 0, first_offset: int = 0) -> list[Record[MemoryEvent]]:
    return [
        Record(TOPIC, partition, first_offset + i, e["event_time_ms"], e["key"].encode(), e)
        for i, e in enumerate(events)
    ]
