"""Typed results of the sixteen graph queries (plain dataclasses: ``to_json`` gives their JSON)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from _typeshed import DataclassInstance


@dataclass(frozen=True, slots=True)
class Scored:
    node_id: str
    node_type: str
    score: float


@dataclass(frozen=True, slots=True)
class NodeInfo:
    node_id: str
    node_type: str
    confidence: float
    time_ms: int
    session: str | None
    text: str


@dataclass(frozen=True, slots=True)
class Step:
    node_id: str
    node_type: str
    depth: int


@dataclass(frozen=True, slots=True)
class Traversal:
    start: str
    steps: list[Step]


@dataclass(frozen=True, slots=True)
class Nodes:
    """Pattern and temporal queries: the matching nodes, in the query's order."""

    nodes: list[NodeInfo]
    total: int


@dataclass(frozen=True, slots=True)
class Resolved:
    node_id: str
    current: str
    chain: list[str]


@dataclass(frozen=True, slots=True)
class Matches:
    """Similarity and BM25: ranked nodes; ``path`` says how BM25 ran ("index" or "scan")."""

    matches: list[Scored]
    path: str = "vector"


@dataclass(frozen=True, slots=True)
class HybridMatch:
    node_id: str
    node_type: str
    score: float
    bm25_rank: int | None
    vector_rank: int | None
    bm25: float
    cosine: float


@dataclass(frozen=True, slots=True)
class Hybrid:
    matches: list[HybridMatch]


@dataclass(frozen=True, slots=True)
class Centrality:
    metric: str
    scores: list[Scored]
    iterations: int = 0
    converged: bool = True
    sources: int = 0


@dataclass(frozen=True, slots=True)
class Path:
    found: bool
    nodes: list[str]
    hops: int
    cost: float


@dataclass(frozen=True, slots=True)
class Affected:
    node_id: str
    node_type: str
    depth: int
    confidence_loss: float
    falls: bool  # no support left once the cascade is retracted


@dataclass(frozen=True, slots=True)
class Revision:
    target: str
    affected: list[Affected]
    unsupported_inferences: list[str]
    invalidated_decisions: list[str]
    impact: float


@dataclass(frozen=True, slots=True)
class Gap:
    node_id: str
    kind: str
    severity: float
    description: str


@dataclass(frozen=True, slots=True)
class Gaps:
    gaps: list[Gap]
    counts: dict[str, int]


@dataclass(frozen=True, slots=True)
class Analogy:
    node_id: str
    node_type: str
    structural: float
    content: float
    score: float


@dataclass(frozen=True, slots=True)
class Analogies:
    anchor: str
    matches: list[Analogy]


@dataclass(frozen=True, slots=True)
class Duplicate:
    keep: str
    duplicate: str
    similarity: float


@dataclass(frozen=True, slots=True)
class Contradiction:
    a: str
    b: str
    reason: str


@dataclass(frozen=True, slots=True)
class Consolidation:
    duplicates: list[Duplicate]
    contradictions: list[Contradiction]
    promotions: list[str]
    orphans: list[str]
    applied: bool = False
    events: int = 0


@dataclass(frozen=True, slots=True)
class Supersession:
    old: str
    new: str
    time_ms: int
    confidence_delta: float


@dataclass(frozen=True, slots=True)
class TopicDrift:
    topic: str
    nodes: int
    stability: float
    direction: float
    revisions_per_day: float
    trajectory: list[Supersession] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Drift:
    topics: list[TopicDrift]


def to_json(result: DataclassInstance) -> dict[str, Any]:
    """A result as a JSON-ready dict."""
    return asdict(result)
