"""The TOC in the compiler (seed 002): time-anchored questions, and the index-free last resort.

Dreaming publishes each user's time hierarchy as ``toc`` nodes (level, period bounds, keywords)
with CONTAINS edges year → month → week → day → segment → episode. Over those nodes:
- ``anchored``: a question with a time anchor ("last week", "in May") is narrowed to the episodes
  of the segments inside the anchored range: the ranked candidates inside it first, in their order,
  then the range's other episodes by term overlap; candidates outside the range follow, halved.
- ``toc_walk``: when every index is down, descend from the years by keyword overlap, best-first,
  within seed 002's bounds, and rank the reached segments' episodes by term overlap.
Both read only node records and CONTAINS edges, never an index.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Protocol, runtime_checkable

from engram.processors.rebac import Viewer
from engram.processors.retrieval.text import query_terms, terms
from engram.processors.retrieval.types import Candidate, Neighbour, NodeRecord
from engram.processors.toc import CONTAINS, TOC_KIND, TimeRange
from engram.schemas.records import Layer

TOC_SOURCE: Final = "toc"


@runtime_checkable
class TocMemory(Protocol):
    def node(self, node_id: str) -> NodeRecord | None: ...

    def neighbours(
        self, node_id: str, layers: Collection[Layer], edge_types: Collection[str] | None = None
    ) -> Sequence[Neighbour]: ...

    def authorized_nodes(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> Iterator[NodeRecord]: ...


@dataclass(frozen=True, slots=True)
class WalkBounds:
    max_depth: int = 5
    max_nodes_visited: int = 100
    beam_width: int = 2


def anchored(
    memory: TocMemory, query: str, anchor: TimeRange, ranked: Sequence[Candidate], viewer: Viewer,
    layers: Collection[Layer], limit: int,
) -> list[Candidate]:  # fmt: skip
    """The ranking narrowed to the anchored range (see the module docstring)."""
    inside: list[Candidate] = []
    outside: list[Candidate] = []
    for c in ranked:
        record = memory.node(c.node_id)
        in_range = record is not None and anchor.contains(record.event_time_ms, record.event_time_ms + 1)
        (inside if in_range else outside).append(c)
    segments = [
        r.node_id for r in memory.authorized_nodes(viewer, layers, {TOC_KIND})
        if r.properties.get("level") == "segment" and anchor.contains(_ms(r, "start_ms"), _ms(r, "end_ms"))
    ]  # fmt: skip
    known = {c.node_id for c in ranked}
    found = _episodes(memory, segments, query, layers, exclude=known)[:limit]
    top = inside[0].score if inside else 1.0
    extra = [Candidate(n, top * score * 0.5, TOC_SOURCE) for n, score in found]
    return inside + extra + [Candidate(c.node_id, c.score * 0.5, c.source) for c in outside]


def toc_walk(
    memory: TocMemory, query: str, viewer: Viewer, layers: Collection[Layer], limit: int,
    bounds: WalkBounds = WalkBounds(),
) -> list[Candidate]:  # fmt: skip
    """Index-free: descend the TOC by keyword overlap and rank the reached episodes."""
    wanted = set(query_terms(query))
    years = [r for r in memory.authorized_nodes(viewer, layers, {TOC_KIND}) if r.properties.get("level") == "year"]
    frontier = sorted(r.node_id for r in years)
    visited = 0
    segments: list[str] = []
    for _ in range(bounds.max_depth):
        if not frontier or visited >= bounds.max_nodes_visited:
            break
        scored = sorted(frontier, key=lambda n: (-_overlap(memory, n, wanted), n))[: bounds.max_nodes_visited - visited]
        visited += len(scored)
        segments += [n for n in scored if _level(memory, n) == "segment"]
        best = [n for n in scored if _level(memory, n) != "segment"][: bounds.beam_width]
        frontier = sorted({nb.node_id for n in best for nb in memory.neighbours(n, layers, (CONTAINS,)) if nb.outgoing})
    return [Candidate(n, score, TOC_SOURCE) for n, score in _episodes(memory, segments, query, layers)[:limit]]


def _episodes(
    memory: TocMemory, segments: Sequence[str], query: str, layers: Collection[Layer], exclude: Collection[str] = ()
) -> list[tuple[str, float]]:
    wanted = set(query_terms(query))
    out: dict[str, float] = {}
    for segment in segments:
        for nb in memory.neighbours(segment, layers, (CONTAINS,)):
            record = memory.node(nb.node_id) if nb.outgoing and nb.node_id not in exclude else None
            if record is not None and record.kind != TOC_KIND:
                out[nb.node_id] = len(wanted & set(terms(record.text))) / max(1, len(wanted))
    return sorted(out.items(), key=lambda item: (-item[1], item[0]))


def _overlap(memory: TocMemory, node_id: str, wanted: set[str]) -> int:
    record = memory.node(node_id)
    return 0 if record is None else len(wanted & set(record.properties.get("keywords", "").split(",")))


def _level(memory: TocMemory, node_id: str) -> str:
    record = memory.node(node_id)
    return "" if record is None else record.properties.get("level", "")


def _ms(record: NodeRecord, name: str) -> int:
    return int(record.properties.get(name, "0"))
