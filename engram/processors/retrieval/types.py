"""Types shared by retrieval, the SLB and the compiler.

A `MemoryGraph` is the bounded, in-process view of one user's memory that the hot path works on
(ARCHITECTURE.md, "State": PPR and neighbourhoods run in process on numpy/scipy arrays, not as a
Cypher round trip per request). It is fed by MemoryEvents; stores (Qdrant, the graph) are for
persistence, System 2 Cypher and people browsing.

Layer filtering (ReBAC) happens *inside* every search, before any similarity is computed: callers
pass the `Viewer` (whose memory, which instances) and the authorized layers, and never see other
nodes.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer, node_instance
from engram.schemas.records import EventRef, Layer


@dataclass(frozen=True, slots=True)
class NodeRecord:
    """One memory node as retrieval sees it. Times are epoch ms; tokens are cl100k tokens."""

    node_id: str
    kind: str
    layer: Layer
    user_id: str | None
    session_id: str | None
    text: str
    tokens: int
    event_time_ms: int
    properties: dict[str, str] = field(default_factory=dict)
    provenance: tuple[EventRef, ...] = ()
    instance: str | None = None  # as written (None: see processors.rebac.node_instance)

    @property
    def home(self) -> str:
        """The layer instance the node lives in (processors.rebac.node_instance)."""
        return node_instance(self.layer, self.user_id, self.instance)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node proposed by a retriever, with the retriever's score and name (for explanations)."""

    node_id: str
    score: float
    source: str


@dataclass(frozen=True, slots=True)
class Neighbour:
    node_id: str
    edge_type: str
    weight: float
    outgoing: bool


class NodeGraph(Protocol):
    """What the reranks read: records and neighbours (`retrieval.tiered` answers it from two tiers)."""

    def node(self, node_id: str) -> NodeRecord | None: ...

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]:
        """Neighbours in authorized layers only, deterministic order."""
        ...


class MemoryGraph(NodeGraph, Protocol):
    def vector_search(
        self, query: npt.NDArray[np.float32], k: int, viewer: Viewer, layers: Collection[Layer]
    ) -> list[Candidate]: ...

    def text_search(self, query: str, k: int, viewer: Viewer, layers: Collection[Layer]) -> list[Candidate]: ...
