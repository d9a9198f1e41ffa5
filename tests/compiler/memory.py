"""Small in-memory fixtures for the compiler tests, on the retrieval package's MemoryView."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import bpe_openai
import numpy as np
import numpy.typing as npt

from engram.processors.embedding.base import Embedder
from engram.processors.embedding.static import StaticEmbedder
from engram.processors.retrieval.view import MemoryView, ViewConfig
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, ContextRequest, EventRef, Layer, MemoryEvent

USER = "u-alice"
DAY_MS = 86_400_000
T0 = 1_700_000_000_000


class Cl100k:
    """cl100k token counts (the compiler's counter in production)."""

    def __init__(self) -> None:
        self._encoding = bpe_openai.get_encoding("cl100k_base")

    def count(self, text: str) -> int:
        return len(self._encoding.encode_ordinary(text))


_EMBEDDER: list[Embedder] = []
_COUNTER: list[Cl100k] = []


def embedder() -> Embedder:
    """The project's default embedder (the shipped static model), loaded once per test process."""
    if not _EMBEDDER:
        _EMBEDDER.append(StaticEmbedder())
    return _EMBEDDER[0]


def counter() -> Cl100k:
    if not _COUNTER:
        _COUNTER.append(Cl100k())
    return _COUNTER[0]


class VectorView(MemoryView):
    """A MemoryView that also hands out node vectors (the SLB's `NodeVectors` protocol)."""

    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        texts = [(r.text if (r := self.node(n)) is not None else "") for n in node_ids]
        return embedder().embed(texts)


@dataclass
class Fixture:
    """Builds MemoryEvents for nodes and edges, then a view."""

    events: list[MemoryEvent] = field(default_factory=list)
    offset: int = 0

    def node(
        self,
        node_id: str,
        text: str,
        *,
        kind: str = "turn",
        layer: Layer = "USER",
        user_id: str | None = USER,
        time_ms: int = T0,
        session_id: str | None = "s1",
    ) -> str:
        change = node_upserted(
            node_id, kind, layer, time_ms, text=text, tokens=counter().count(text), user_id=user_id,
            session_id=session_id,
        )  # fmt: skip
        self.events.append(memory_event(user_id or "shared", time_ms, [self._ref()], NODE_UPSERTED, change))
        return node_id

    def edge(self, edge_type: str, src: str, dst: str, *, layer: Layer = "USER", weight: float = 1.0) -> None:
        change = edge_upserted(edge_type, src, dst, layer, weight=weight)
        self.events.append(memory_event(USER, T0, [self._ref()], EDGE_UPSERTED, change))

    def _ref(self) -> EventRef:
        self.offset += 1
        return {"topic": "engram.turns", "partition": 0, "offset": self.offset}

    def view(self, *, text_index: bool = True, vector_index: bool = True) -> VectorView:
        view = VectorView(
            ViewConfig(text_index=text_index, vector_index=vector_index), embedder=embedder(), token_counter=counter()
        )
        view.apply(self.events)
        return view


def request(
    query: str,
    budget: int,
    *,
    layers: Sequence[Layer] = ("SYSTEM", "ORGANIZATION", "TEAM", "USER"),
    intent: str | None = None,
    session_id: str = "s-req",
    user_id: str = USER,
    time_ms: int = T0 + DAY_MS,
) -> ContextRequest:
    return {
        "request_id": stable_id("request", query, budget, session_id),
        "user_id": user_id,
        "session_id": session_id,
        "query": query,
        "token_budget": budget,
        "authorized_layers": list(layers),
        "intent_hint": intent,
        "agent_id": None,
        "event_time_ms": time_ms,
    }
