"""The SLB bench's memories: a LoCoMo conversation as one user's plain turn nodes (a node per turn,
NEXT edges within a session, no Trace concepts) with its QA questions of categories 1-4, and the
same memory padded with distractor turns (``--memory-scale``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from engram.benchmarks.retrieval_metrics import canonical_dia_id, normalize_evidence
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, EventRef, MemoryEvent

CATEGORIES: Final = (1, 2, 3, 4)


@dataclass(frozen=True, slots=True)
class Conversation:
    user: str
    events: list[MemoryEvent]
    texts: dict[str, str]  # node id -> text
    dia: dict[str, str]  # node id -> canonical dia_id (real turns only, not distractors)
    questions: list[tuple[str, frozenset[str]]]


def load_conversation(name: str, data: dict[str, Any]) -> Conversation:
    user = f"locomo-{name}"
    events: list[MemoryEvent] = []
    texts: dict[str, str] = {}
    dia: dict[str, str] = {}
    sessions = sorted(int(k.split("_")[1]) for k in data if k.startswith("session_") and k.count("_") == 1)
    for num in sessions:
        turns = data.get(f"session_{num}")
        if not isinstance(turns, list):
            continue
        previous: str | None = None
        for index, turn in enumerate(turns):
            dia_id = canonical_dia_id(str(turn.get("dia_id", "")))
            if dia_id is None:
                continue
            node_id = stable_id("locomo", name, dia_id)
            text = f"{turn.get('speaker', '')}: {turn.get('text', '')}"
            texts[node_id], dia[node_id] = text, dia_id
            ref: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": len(texts)}]
            node = node_upserted(node_id, "turn", "USER", num * 10_000 + index, text=text, user_id=user)
            events.append(memory_event(user, num * 10_000 + index, ref, NODE_UPSERTED, node))
            if previous is not None:
                events.append(
                    memory_event(user, 0, ref, EDGE_UPSERTED, edge_upserted("NEXT", previous, node_id, "USER"))
                )
            previous = node_id
    existing = set(dia.values())
    questions = []
    for item in data.get("qa", []):
        gold = normalize_evidence(item.get("evidence", []), existing)
        if item.get("category") in CATEGORIES and gold:
            questions.append((str(item["question"]), frozenset(gold)))
    return Conversation(user, events, texts, dia, questions)


def with_distractors(conv: Conversation, pool: Sequence[str], scale: int) -> Conversation:
    """The conversation plus (scale − 1)·N distractor turns, each the first half of one pool text
    joined to the second half of another (deterministic strides), with no edges."""
    if scale <= 1 or not pool:
        return conv
    events, texts = list(conv.events), dict(conv.texts)
    for i in range((scale - 1) * len(conv.texts)):
        a, b = pool[(7 * i) % len(pool)].split(), pool[(13 * i + 5) % len(pool)].split()
        text = " ".join(a[: len(a) // 2] + b[len(b) // 2 :])
        node_id = stable_id("slb-distractor", conv.user, i)
        texts[node_id] = text
        ref: list[EventRef] = [{"topic": "engram.turns", "partition": 1, "offset": i}]
        node = node_upserted(node_id, "turn", "USER", i, text=text, user_id=conv.user)
        events.append(memory_event(conv.user, i, ref, NODE_UPSERTED, node))
    return replace(conv, events=events, texts=texts)
