"""The ContextCompiler: a ContextRequest in, a token-budgeted, ordered CompiledContext out.

Steps (seed 001 Algorithm 1, with seed 000's routing and SLB and seed 002's bounds):
1. ReBAC: the request's authorized layers are validated first and passed into every search.
2. Route (FACTUAL → System 1, THEMATIC/RESEARCH → System 2, CODE → code edges) and intent.
3. Seeds: the caller's candidates, else an SLB hit (the cached neighbourhood re-scored for this
   query, plus the prefetched Atlas children), else the hybrid search (then inserted in the SLB).
   A hit serves only while every cached node is still stored, visible and not dormant; otherwise
   the entry is dropped and the request searches as on a miss, where the archive's rules apply.
4. Expansion from the best seeds over the route's edge types, within the safety bounds.
5. Value = α·relevance + β·PPR·decay over the pool; pinned kinds first; 0/1 knapsack; the user's
   facts block competes as one more item.
6. Order: pinned, then the facts block, then Kahn's order over NEXT/CAUSAL edges (time tie-break).
7. A defensive check: an item outside the authorized layers raises `UnauthorizedItemError`.

Pure: no I/O. `clock` only measures latency and enforces the timeout; it never decides a score.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.compiler.authorized import AuthorizedGraph
from engram.processors.compiler.code_route import UNRESOLVED_KIND, code_family, only_family_code, with_family
from engram.processors.compiler.config import BALANCED, CompilerConfig
from engram.processors.compiler.deliberate import GraphStoreExpander, StoreTimeoutError, StoreUnavailableError, joined
from engram.processors.compiler.expand import Expansion, GraphEdge, expand
from engram.processors.compiler.items import Scored, facts_item, with_stated_date
from engram.processors.compiler.order import causal_order
from engram.processors.compiler.scoring import score_pool
from engram.processors.compiler.seeds import Retrieved, hybrid_seeds, reranked_seeds, vector_weight
from engram.processors.compiler.selection import select
from engram.processors.compiler.timebox import TocMemory, anchored, toc_walk
from engram.processors.embedding.base import Embedder
from engram.processors.rebac import Viewer, authorized_layers, ensure_authorized, viewer_of
from engram.processors.retrieval.archive import ArchivedMemory, CitingMemory, WholeMemory, from_archive, spread
from engram.processors.retrieval.types import Candidate, MemoryGraph, NodeRecord
from engram.processors.router.decision import Intent, Route, RouteClassifier, RouteDecision
from engram.processors.router.rules import RuleRouter
from engram.processors.slb.lexical import NodeTerms
from engram.processors.slb.neighbourhood import (
    NodeVectors,
    anchor_concept,
    atlas_children,
    rescore,
    serves_now,
)
from engram.processors.slb.table import LookasideTable
from engram.processors.toc import time_anchor
from engram.processors.tokens import TokenCounter
from engram.schemas.records import CompiledContext, ContextRequest, EventRef, Layer

Vector = npt.NDArray[np.float32]
WARM_UP_TEXT = "What did we decide about the release last week?"
SUFFIX_CACHE = 4096


@runtime_checkable
class PinnedSource(Protocol):
    def pinned_nodes(self, viewer: Viewer, layers: Collection[Layer]) -> Sequence[str]:
        """Ids of the procedural/policy nodes visible to the user (always considered first)."""
        ...


@dataclass(slots=True)
class _Timer:
    clock: Callable[[], float]
    start: float = 0.0
    last: float = 0.0
    laps: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.start = self.last = self.clock()

    def lap(self, name: str) -> None:
        now = self.clock()
        self.laps[name] = (now - self.last) * 1000.0
        self.last = now

    def total(self) -> dict[str, float]:
        return {**self.laps, "total": (self.clock() - self.start) * 1000.0}


@dataclass(slots=True)
class _Seeding:
    candidates: list[Candidate]
    cache_hit: bool = False
    fallbacks: list[str] = field(default_factory=list)
    partial: bool = False


class ContextCompiler:
    def __init__(
        self,
        graph: MemoryGraph,
        embedder: Embedder,
        token_counter: TokenCounter,
        config: CompilerConfig = BALANCED,
        *,
        router: RouteClassifier | None = None,
        slb: LookasideTable | None = None,
        store: GraphStoreExpander | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.graph = graph
        self.embedder = embedder
        self.tokens = token_counter
        self.config = config
        self.router: RouteClassifier = router or RuleRouter()
        self.slb = slb
        self.store = store
        self.clock = clock
        self.vectors: NodeVectors | None = graph if isinstance(graph, NodeVectors) else None
        self.lexical: NodeTerms | None = graph if isinstance(graph, NodeTerms) else None
        self.pinned: PinnedSource | None = graph if isinstance(graph, PinnedSource) else None
        self.archive: ArchivedMemory | None = graph if isinstance(graph, ArchivedMemory) else None
        self._suffixes: dict[str, int] = {}

    def warm_up(self) -> None:
        """Load what the compile path otherwise loads on its first request: the embedder's tables
        or weights and the token counter's vocabulary. A request's deadline (``bounds.timeout_ms``)
        counts from its start, so a first request that paid for the load (the static table: ~0.2 s)
        would be cut short and answered from the vector index alone."""
        self.embedder.embed([WARM_UP_TEXT])
        self.tokens.count(WARM_UP_TEXT)

    def compile(
        self,
        request: ContextRequest,
        candidates: list[Candidate] | None = None,
        facts_block: tuple[str, list[EventRef]] | None = None,
    ) -> CompiledContext:
        timer = _Timer(self.clock)
        layers = authorized_layers(request["authorized_layers"])
        decision = self.router.route(request["query"], request["intent_hint"])
        timer.lap("route")
        query_vector, embed_failed = self._embed_query(request["query"])
        timer.lap("embed")
        deadline = timer.start + self.config.bounds.timeout_ms / 1000.0
        walk = AuthorizedGraph(self.graph, viewer_of(request["user_id"], request.get("instances")), layers)
        seeding = self._seed(request, walk, decision, query_vector, candidates, deadline)
        if embed_failed:
            seeding.fallbacks.insert(0, embed_failed)
        family: list[str] = []
        if decision.route is Route.CODE:
            family = code_family(self.graph, walk, request["query"], walk.viewer, layers)
            seeding.candidates = with_family(family, seeding.candidates)
        timer.lap("retrieve")
        expansion, stored = self._expand(seeding.candidates, walk, decision, deadline, seeding.fallbacks)
        timer.lap("expand")
        pool = self._pool(request, walk, seeding, expansion, stored)
        if facts_block is not None and facts_block[0].strip():
            pool.append(self._facts(request, facts_block, query_vector))
        timer.lap("score")
        navigation = frozenset(self.config.navigation_kinds)
        items = [s for s in pool if s.kind not in navigation]
        if family:  # a structural answer to a code question: other code no longer competes (seed 000 §4.2.1)
            items = only_family_code(items, family)
        chosen = select(items, request["token_budget"], self.config.knapsack)
        timer.lap("select")
        ordered = self._order(chosen.pinned, chosen.rest, expansion.edges, walk, family)
        timer.lap("order")
        ensure_authorized(((s.node_id, s.layer, s.owner, s.instance) for s in ordered), walk.viewer, layers)
        fallbacks = seeding.fallbacks + chosen.notes
        if expansion.stop_reason:
            fallbacks.append(f"expansion stopped: {expansion.stop_reason}")
        return {
            "request_id": request["request_id"],
            "user_id": request["user_id"],
            "session_id": request["session_id"],
            "query": request["query"],
            "route": decision.route.value,
            "route_reason": decision.reason,
            "intent": decision.intent.value,
            "cache_hit": seeding.cache_hit,
            "partial": seeding.partial or expansion.partial,
            "fallbacks": fallbacks,
            "token_budget": request["token_budget"],
            "total_tokens": sum(s.tokens for s in ordered),
            "items": [s.item() for s in ordered],
            "timings_ms": timer.total(),
        }

    def _embed_query(self, query: str) -> tuple[Vector | None, str | None]:
        """The query's vector, or None and the reason when the embedder fails (a remote one that is
        down or late): the request is then answered from the lexical index, without the SLB, whose
        entries are keyed by query vectors (seed 002's chain: a partial result beats none)."""
        try:
            return self.embedder.embed([query])[0], None
        except Exception as exc:  # any embedder failure degrades the answer; it never fails the request
            return None, f"embedder failed ({type(exc).__name__}: {exc}): lexical search only"

    # --- seeds and the SLB ----------------------------------------------------------------------

    def _seed(
        self,
        request: ContextRequest,
        walk: AuthorizedGraph,
        decision: RouteDecision,
        query_vector: Vector | None,
        candidates: list[Candidate] | None,
        deadline: float,
    ) -> _Seeding:
        if candidates is not None:
            return _Seeding(list(candidates), fallbacks=["caller candidates"])
        layers = walk.layers
        if self.slb is None or not self.config.use_slb or query_vector is None:
            found = self._search(request, walk, decision, query_vector, deadline)
            return _Seeding(found.candidates, False, found.fallbacks, found.partial)
        buffer = self.slb.buffer(walk.viewer, request["session_id"], layers, int(query_vector.shape[0]))
        epoch = self.slb.epoch(request["user_id"])
        look = buffer.lookup(query_vector, epoch)
        if look.hit and look.entry is not None and not serves_now(look.entry, walk, self.archive):
            buffer.drop(look.entry)
        elif look.hit and look.entry is not None:
            prefetch = self.slb.config.prefetch_children
            if look.entry.anchor_id is not None and prefetch > 0:
                children = atlas_children(walk, look.entry.anchor_id, layers, prefetch)
                buffer.stage(look.entry, children, min(look.entry.scores, default=0.0))
            ranked = rescore(
                look.entry,
                query_vector,
                self.vectors,
                self.lexical,
                request["query"],
                vector_weight(decision.intent),
                limit=self.config.seeds_k,
            )
            return _Seeding(reranked_seeds(self.graph, ranked, request["query"]), cache_hit=True)
        found = self._search(request, walk, decision, query_vector, deadline)
        if found.candidates and not found.partial:  # never cache a result cut short by the bounds
            ids = [c.node_id for c in found.candidates]
            anchor = anchor_concept(walk, ids, layers)
            # Laid out for scoring at its first hit (`rescore`), not here: when sessions seldom repeat
            # a question, most entries are never hit, and laying one out cost a miss 11% of the
            # worker's compile time (LoCoMo's questions, one principal's 20,000 nodes, py-spy).
            buffer.insert(query_vector, ids, [c.score for c in found.candidates], anchor, epoch)
        return _Seeding(found.candidates, False, found.fallbacks, found.partial)

    def _search(
        self,
        request: ContextRequest,
        walk: AuthorizedGraph,
        decision: RouteDecision,
        query_vector: Vector | None,
        deadline: float,
    ) -> Retrieved:
        """A search of the memory (on an SLB miss): with an archive, live and dormant rows together,
        so that a cache miss resolves to an archived node when one ranks (seed 000 §5.3: the
        context then holds it and the service re-awakens it); the consolidated nodes among the
        results bring in the episodes they cite (spreading activation, seed 000 §5.4)."""
        memory: MemoryGraph = WholeMemory(self.graph) if isinstance(self.graph, ArchivedMemory) else self.graph
        found = hybrid_seeds(
            memory,
            request["query"],
            query_vector,
            walk.viewer,
            walk.layers,
            decision.intent,
            self.config.seeds_k,
            max_scan=self.config.bounds.max_nodes_visited * 10,
            walks_graph=decision.route is not Route.FACTUAL and self.config.beta > 0,
            deadline=deadline,
            clock=self.clock,
        )
        if isinstance(self.graph, ArchivedMemory):
            found.candidates = from_archive(self.graph, found.candidates, self.config.archive_top)
        if isinstance(self.graph, CitingMemory) and found.candidates:
            found.candidates = spread(self.graph, found.candidates, query_vector, walk.viewer, walk.layers)
        if isinstance(self.graph, TocMemory):
            _by_time(self.graph, request, walk, found, self.config.seeds_k)
        return found

    # --- expansion, scoring --------------------------------------------------------------------

    def _expand(
        self,
        candidates: list[Candidate],
        walk: AuthorizedGraph,
        decision: RouteDecision,
        deadline: float,
        fallbacks: list[str],
    ) -> tuple[Expansion, dict[str, NodeRecord]]:
        """The expansion, and the records of nodes only the graph store holds (System 2 via Cypher)."""
        cfg = self.config
        seeds = [c.node_id for c in candidates[: cfg.seed_count]]
        if decision.route is Route.CODE:
            edge_types: tuple[str, ...] = cfg.code_edges
            hops = cfg.bounds.max_hops
        elif decision.route is Route.FACTUAL:
            edge_types, hops = cfg.system2_edges, cfg.factual_hops
        else:
            edge_types, hops = cfg.system2_edges, cfg.bounds.max_hops
        if decision.intent is Intent.TIME_BOXED:
            hops = min(hops, 1)
        if cfg.beta <= 0:
            hops = 0
        if self.store is not None and decision.route.system == "system2" and hops > 0 and seeds:
            limit = cfg.bounds.max_nodes_visited
            try:
                found = self.store.expand(seeds, walk.viewer, walk.layers, edge_types, hops, limit)
            except StoreTimeoutError as exc:
                fallbacks.append(f"graph store {exc}: expanded in process")
            except StoreUnavailableError as exc:
                fallbacks.append(f"graph store unavailable ({exc}): expanded in process")
            else:
                stored = {r.node_id: r for r in found.records if self.graph.node(r.node_id) is None}
                return joined(seeds, found, limit), stored
        local = expand(walk, seeds, walk.layers, edge_types, cfg.bounds, hops, deadline=deadline, clock=self.clock)
        return local, {}

    def _pool(
        self,
        request: ContextRequest,
        walk: AuthorizedGraph,
        seeding: _Seeding,
        expansion: Expansion,
        stored: dict[str, NodeRecord],
    ) -> list[Scored]:
        """Relevance comes from retrieval only; a node reached only through the graph competes on
        PPR·decay. Giving such nodes their raw cosine as relevance was measured worse on LoCoMo
        (budget_recall@1000 0.841 → 0.757): cosine is not on the scale of the normalized fused scores."""
        relevance = _relevance(seeding.candidates, self.config.relevance_power)
        ids = list(dict.fromkeys([c.node_id for c in seeding.candidates] + expansion.nodes))
        if self.pinned is not None:
            known = set(ids)
            ids.extend(n for n in self.pinned.pinned_nodes(walk.viewer, walk.layers) if n not in known)
        records = [
            r for r in (self.graph.node(n) or stored.get(n) for n in ids) if r is not None and r.kind != UNRESOLVED_KIND
        ]
        seeds = {
            c.node_id: max(relevance.get(c.node_id, 0.0), 1e-6) for c in seeding.candidates[: self.config.seed_count]
        }
        scored = score_pool(records, relevance, expansion.edges, seeds, request["event_time_ms"], self.config)
        return [with_stated_date(s, r, self._suffix_tokens) for s, r in zip(scored, records, strict=True)]

    def _suffix_tokens(self, suffix: str) -> int:
        """Tokens of a stated date's suffix; the few distinct ones are counted once."""
        count = self._suffixes.get(suffix)
        if count is None:
            if len(self._suffixes) >= SUFFIX_CACHE:
                self._suffixes.clear()
            count = self._suffixes[suffix] = self.tokens.count(suffix)
        return count

    def _facts(self, request: ContextRequest, facts_block: tuple[str, list[EventRef]], query: Vector | None) -> Scored:
        text, sources = facts_block
        # Without vectors (the embedder failed) the block competes on its bonus alone.
        vector = self._embed_query(text)[0] if query is not None else None
        sim = 0.0 if query is None or vector is None else float(vector @ np.asarray(query, dtype=np.float32))
        relevance = max(0.0, sim)
        score = self.config.alpha * relevance + self.config.facts_bonus
        tokens = self.tokens.count(text)
        return facts_item(request["user_id"], text, sources, tokens, relevance, score, request["event_time_ms"])

    # --- order -----------------------------------------------------------------------------------

    def _order(
        self,
        pinned: list[Scored],
        rest: list[Scored],
        edges: Sequence[GraphEdge],
        walk: AuthorizedGraph,
        family: Sequence[str] = (),
    ) -> list[Scored]:
        """Pinned, facts, the code family in inheritance order (CODE route), then Kahn's order."""
        facts = [s for s in rest if s.kind == "facts"]
        by_id = {s.node_id: s for s in rest}
        chosen_family = [by_id[n] for n in family if n in by_id]
        in_family = {s.node_id for s in chosen_family}
        nodes = {s.node_id: s for s in rest if s.kind != "facts" and s.node_id not in in_family}
        kinds = frozenset(self.config.order_edges)
        pairs = {(e.src, e.dst) for e in edges if e.edge_type in kinds and e.src in nodes and e.dst in nodes}
        pairs.update(walk.edges_among(list(nodes), kinds))
        ordering = causal_order(list(nodes), sorted(pairs), {n: s.event_time_ms for n, s in nodes.items()})
        return pinned + facts + chosen_family + [nodes[n] for n in ordering.order]


def _relevance(candidates: Sequence[Candidate], power: float) -> dict[str, float]:
    """Retrieval scores scaled to [0, 1] by the best one, raised to `power` (first occurrence wins)."""
    top = max((c.score for c in candidates), default=0.0)
    out: dict[str, float] = {}
    for c in candidates:
        out.setdefault(c.node_id, (max(0.0, c.score) / top) ** power if top > 0 else 0.0)
    return out


def _by_time(memory: TocMemory, request: ContextRequest, walk: AuthorizedGraph, found: Retrieved, k: int) -> None:
    """The TOC route (seed 002): a time-anchored question is narrowed to its range; with every
    index down, the index-free descent of the time hierarchy answers first."""
    user, query, layers = walk.viewer, request["query"], walk.layers
    anchor = time_anchor(query, request["event_time_ms"])
    if anchor is not None:
        found.candidates = anchored(memory, query, anchor, found.candidates, user, layers, k)
        found.fallbacks.append(f"time anchor [{anchor.start_ms}, {anchor.end_ms}): narrowed by the TOC")
    if {f.split(":", 1)[0] for f in found.fallbacks} >= {"vector", "bm25"}:
        walked = toc_walk(memory, query, user, layers, k)
        seen = {c.node_id for c in walked}
        found.candidates = walked + [c for c in found.candidates if c.node_id not in seen]
        found.fallbacks.append(f"every index down: agentic TOC search found {len(walked)}")
