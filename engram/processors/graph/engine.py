"""GraphEngine: seed 004's sixteen query types over the memory a worker owns.

The engine holds a `GraphStore` fed by the same MemoryEvents as the view (``apply``), and answers
a `GraphQuery` for a `Principal` on that principal's `Subgraph` (restrict before traversal). The
subgraph's CSR arrays are derived in numpy once per (principal, store version) and kept in a small
LRU, so queries between two changes share them; a change costs the next query one O(V + E) pass,
never a rebuild from events.

Libraries: scipy's sparse products carry PageRank and the batched Brandes betweenness, and its
csgraph the drift topics' components; the rest is written here, each for a measured reason named
in its module (early-stopping path searches, set-based BFS levels, prefix-filtered duplicates).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from engram.processors.embedding.base import Embedder
from engram.processors.graph import centrality, cognitive, maintenance, navigate, paths, search
from engram.processors.graph.apply import ApplyContext, consolidation_events
from engram.processors.graph.fold import apply_events
from engram.processors.graph.params import Params
from engram.processors.graph.results import Consolidation
from engram.processors.graph.store import GraphStore
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import QUERY_TYPES, Principal, QueryError
from engram.processors.graph.vectors import BorrowedVectors, VectorLookup
from engram.schemas.records import MemoryEvent

PREVIEW_CHARS = 120  # of a node's text shown beside its id (`previews`)


@dataclass(frozen=True, slots=True)
class GraphQuery:
    """One query: its type (``QUERY_TYPES``) and its parameters, as JSON gives them."""

    query_type: str
    params: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Answer:
    """A query's typed result, and the MemoryEvents an applied query emits (none for a dry run)."""

    result: Any
    events: list[MemoryEvent] = field(default_factory=list)


@dataclass
class GraphEngine:
    """``embedder`` embeds query texts, and node texts that came without a vector. With ``vectors``
    (a worker's view: `MemoryView.node_vectors`, zero rows for none), the store reads the view's
    vectors instead of keeping its own (processors/graph/vectors.py): the view, fed the same
    events first, holds every node's."""

    embedder: Embedder | None = None
    vectors: VectorLookup | None = None
    cache_size: int = 8
    store: GraphStore = field(default_factory=GraphStore)
    _cache: OrderedDict[tuple[Any, ...], Subgraph] = field(default_factory=OrderedDict, repr=False)

    def __post_init__(self) -> None:
        if self.vectors is not None:
            self.store.vectors = BorrowedVectors(self.vectors, self.store.ids)

    def attach(self, embedder: Embedder | None) -> None:
        """The embedder of an engine read back from a snapshot (sinks/viewstate.py), which holds none."""
        self.embedder = embedder

    def __getstate__(self) -> dict[str, object]:
        """Everything but the embedder (a model, the worker's own) and the cache of answers."""
        state = dict(self.__dict__)
        state["embedder"], state["_cache"] = None, OrderedDict()
        return state

    def __setstate__(self, state: dict[str, object]) -> None:
        self.__dict__.update(state)

    def apply(self, events: Iterable[MemoryEvent]) -> None:
        """Fold events into the graph; without ``vectors``, the nodes that came without a vector
        get one from the embedder, in one batch."""
        pending = apply_events(self.store, events)
        if self.vectors is not None or self.embedder is None:
            return
        rows = sorted({r for r in pending if self.store.alive[r] and self.store.texts[r]})
        if not rows:
            return
        found = np.asarray(self.embedder.embed([self.store.texts[r] for r in rows]))
        for row, vector in zip(rows, found, strict=True):
            if vector.any():
                self.store.vectors.set(row, vector)
        self.store.version += 1

    def subgraph(self, principal: Principal) -> Subgraph:
        key = (principal.key, self.store.version)
        found = self._cache.get(key)
        if found is not None:
            self._cache.move_to_end(key)
            return found
        built = self._cache[key] = Subgraph(self.store, principal)
        while len(self._cache) > self.cache_size:
            self._cache.popitem(last=False)
        return built

    def run(self, principal: Principal, query: GraphQuery) -> Any:
        """Run one query; raises `QueryError` for an unknown type, node or parameter."""
        handler = _HANDLERS.get(query.query_type)
        if handler is None:
            msg = f"unknown query type {query.query_type!r}; expected one of {', '.join(QUERY_TYPES)}"
            raise QueryError(msg)
        return handler(self, self.subgraph(principal), Params(query.params))

    def answer(self, principal: Principal, query: GraphQuery, apply: ApplyContext | None = None) -> Answer:
        """Run one query; with ``apply``, a consolidation is also turned into the MemoryEvents that
        carry it out (processors/graph/apply.py). Other query types are read-only."""
        result = self.run(principal, query)
        if apply is None:
            return Answer(result)
        if not isinstance(result, Consolidation):
            msg = f"only a consolidation can be applied, not {query.query_type!r}"
            raise QueryError(msg)
        events = consolidation_events(self.store, result, apply)
        return Answer(replace(result, applied=True, events=len(events)), events)

    def previews(self, principal: Principal, found: object, width: int = PREVIEW_CHARS) -> dict[str, str]:
        """The start (``width`` characters at most) of the text of every node ``found`` names that
        ``principal`` may see, by id; ``found`` is a result as `to_json` gives it."""
        sub = self.subgraph(principal)
        out: dict[str, str] = {}
        for text in _strings(found):
            if text not in out and sub.find(text) is not None:
                flat = " ".join(self.store.texts[self.store.index[text]].split())
                out[text] = flat if len(flat) <= width else flat[: width - 1] + "…"
        return out

    def embed(self, text: str) -> np.ndarray[Any, Any] | None:
        if self.embedder is None or not text:
            return None
        vector: np.ndarray[Any, Any] = np.asarray(self.embedder.embed([text]))[0]
        return vector

    def _vector(self, params: Params) -> np.ndarray[Any, Any] | None:
        given = params.vector("vector")
        return given if given is not None else self.embed(params.text("text", ""))


Handler = Callable[[GraphEngine, Subgraph, Params], Any]


def _strings(value: object) -> Iterable[str]:
    """Every string inside a JSON-ready value (dict values and list items, at any depth)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _text_query(p: Params) -> search.TextQuery:
    return search.TextQuery(p.text("text"), p.integer("limit", 10), p.node_types("types"))


def _similarity(e: GraphEngine, sub: Subgraph, p: Params) -> Any:
    vector = e._vector(p)
    if vector is None:
        msg = "similarity needs a 'vector', or a 'text' and an embedder"
        raise QueryError(msg)
    return search.similarity(sub, vector, p.integer("limit", 10), p.number("min_score", -1.0), p.node_types("types"))


def _bm25(e: GraphEngine, sub: Subgraph, p: Params) -> Any:
    query = _text_query(p)
    return search.bm25_scan(sub, query) if p.flag("scan") else search.bm25(sub, query)


def _centrality(kind: str) -> Handler:
    run = {"pagerank": centrality.pagerank, "degree": centrality.degree, "betweenness": centrality.betweenness}[kind]

    def handler(e: GraphEngine, sub: Subgraph, p: Params) -> Any:
        query = centrality.CentralityQuery(
            limit=p.integer("limit", 10),
            types=p.node_types("types"),
            alpha=p.number("alpha", centrality.ALPHA),
            direction=p.choice("direction", ("both", "in", "out")),
            samples=p.integer("samples", 200),
        )
        return run(sub, query)

    return handler


def _path(weighted: bool) -> Handler:
    def handler(e: GraphEngine, sub: Subgraph, p: Params) -> Any:
        source, target = p.node(sub, "source"), p.node(sub, "target")
        if weighted:
            return paths.dijkstra_path(sub, source, target)
        return paths.bfs_path(sub, source, target, p.integer("max_depth", paths.MAX_DEPTH))

    return handler


def _revise(e: GraphEngine, sub: Subgraph, p: Params) -> Any:
    if "node" in p:
        return cognitive.revise(sub, p.node(sub, "node"))
    best = search.bm25(sub, search.TextQuery(p.text("text"), 1)).matches
    if not best:
        msg = "no visible node matches the hypothesis text"
        raise QueryError(msg)
    return cognitive.revise(sub, p.node_id(sub, best[0].node_id))


_HANDLERS: dict[str, Handler] = {
    "traversal": lambda e, sub, p: navigate.traverse(sub, navigate.TraversalQuery(
        p.node(sub, "node"), p.edge_types("edge_types"), p.choice("direction", navigate.DIRECTIONS),
        p.integer("max_depth", 3), p.integer("limit", 100))),
    "pattern": lambda e, sub, p: navigate.pattern(sub, navigate.PatternQuery(
        p.node_types("types"), frozenset(p.strings("sessions")), p.number("min_confidence", 0.0),
        p.number("max_confidence", 1.0), p.optional_int("start_ms"), p.optional_int("end_ms"),
        p.integer("limit", 100), not p.flag("oldest_first"))),
    "temporal": lambda e, sub, p: navigate.temporal(
        sub, p.integer("start_ms", 0), p.integer("end_ms", 2**62), p.node_types("types"), p.integer("limit", 100)),
    "similarity": _similarity,
    "resolve": lambda e, sub, p: navigate.resolve(sub, p.node(sub, "node")),
    "bm25": _bm25,
    "hybrid": lambda e, sub, p: search.hybrid(sub, _text_query(p), e._vector(p)),
    "pagerank": _centrality("pagerank"),
    "degree": _centrality("degree"),
    "betweenness": _centrality("betweenness"),
    "bfs": _path(weighted=False),
    "dijkstra": _path(weighted=True),
    "revise": _revise,
    "gaps": lambda e, sub, p: cognitive.gaps(sub, cognitive.GapQuery(
        p.number("confidence_threshold", 0.5), p.number("stale_days", 30.0), p.optional_int("now_ms"),
        p.integer("limit", 100))),
    "analogy": lambda e, sub, p: cognitive.analogy(sub, p.node(sub, "node"), p.integer("limit", 5)),
    "consolidate": lambda e, sub, p: maintenance.consolidate(sub, maintenance.ConsolidationQuery(
        p.number("threshold", 0.9), limit=p.integer("limit", 1000))),
    "drift": lambda e, sub, p: maintenance.drift(sub, maintenance.DriftQuery(
        p.text("topic", ""), p.number("min_relevance", 0.1), p.integer("limit", 10))),
}  # fmt: skip
