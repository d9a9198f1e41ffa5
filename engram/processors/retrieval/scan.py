"""The index-free last resort of the fallback chain (seed 002, "agentic search always works").

Visits authorized nodes newest first, analysing each text on the fly, and scores a node by the
share of distinct query terms it contains. Bounded: it stops after ``max_nodes`` nodes or at the
deadline, and says so (``complete`` is False), because a partial answer beats none.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

from engram.processors.rebac import Viewer
from engram.processors.retrieval.text import query_terms, terms
from engram.processors.retrieval.types import Candidate, NodeRecord
from engram.schemas.records import Layer

SCAN_SOURCE = "scan"
_CLOCK_EVERY = 256  # nodes between deadline checks


class ScannableMemory(Protocol):
    def authorized_nodes(
        self, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None = None
    ) -> Iterator[NodeRecord]: ...


@dataclass(frozen=True, slots=True)
class ScanResult:
    candidates: list[Candidate]
    visited: int
    complete: bool


def scan_search(
    memory: ScannableMemory,
    query: str,
    k: int,
    viewer: Viewer,
    layers: Collection[Layer],
    *,
    kinds: Collection[str] | None = None,
    max_nodes: int,
    deadline: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> ScanResult:
    """Term matching over at most ``max_nodes`` authorized nodes; ``deadline`` is a ``clock()`` value."""
    wanted = frozenset(query_terms(query))
    hits: list[tuple[float, int, str]] = []
    visited = 0
    complete = True
    for record in memory.authorized_nodes(viewer, layers, kinds):
        if visited >= max_nodes or (deadline is not None and visited % _CLOCK_EVERY == 0 and clock() > deadline):
            complete = False
            break
        visited += 1
        if not wanted:
            continue
        matched = len(wanted.intersection(terms(record.text)))
        if matched:
            hits.append((matched / len(wanted), visited, record.node_id))
    hits.sort(key=lambda h: (-h[0], h[1]))
    return ScanResult([Candidate(nid, score, SCAN_SOURCE) for score, _, nid in hits[:k]], visited, complete)
