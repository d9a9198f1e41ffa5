"""Maintenance queries (seed 004 §4.8-4.9): consolidation and drift.

Consolidation, a dry run unless applied (`processors/graph/apply.py` turns a report into
MemoryEvents with reasons):
- duplicates: node pairs of one type and polarity whose term sets have Jaccard ≥ 0.9 (the index
  drops "not", so a statement and its denial would otherwise match), neither of them dormant (an
  applied merge leaves the duplicate dormant, so it is not reported again). Exact, not O(V²):
  prefix filtering (Bayardo et al., "Scaling up all pairs similarity search", WWW 2007) only
  compares nodes that share one of their rarest terms, where any pair above the threshold must;
- contradictions: fact-like nodes whose terms agree once negation is set aside but whose
  negations (or antonyms) disagree, with no CONTRADICTS edge between them yet;
- inference promotion: inferences with confidence > 0.9 and 3 or more supporters;
- orphans: nodes with no edge at all.
Drift: per topic (a chain of SUPERSEDES versions is one topic; other nodes group by session):
stability (share never superseded), direction (mean confidence change per supersession),
revisions per day, and the chronological trajectory. Most unstable first.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from itertools import chain, combinations

import numpy as np
import numpy.typing as npt
from scipy.sparse import csgraph, csr_array

from engram.processors.graph.results import Consolidation, Contradiction, Drift, Duplicate, Supersession, TopicDrift
from engram.processors.graph.search import TextQuery, bm25_scores
from engram.processors.graph.store import STATEMENT_TYPES
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.support import support_pairs
from engram.processors.graph.types import EdgeType, NodeType

DAY_MS = 86_400_000
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ConsolidationQuery:
    threshold: float = 0.9
    promote_confidence: float = 0.9
    promote_support: int = 3
    limit: int = 1000


def _flat_terms(sub: Subgraph) -> tuple[IntArray, IntArray]:
    """(local node, term id) for every distinct term of every visible node."""

    def build() -> tuple[IntArray, IntArray]:
        node_terms = sub.store.terms.node_terms
        per_node = [node_terms.get(int(r), ()) for r in sub.rows]
        sizes = np.fromiter(map(len, per_node), dtype=np.int64, count=sub.n)
        ids = np.fromiter(chain.from_iterable(per_node), dtype=np.int64, count=int(sizes.sum()))
        return np.repeat(np.arange(sub.n), sizes), ids

    return sub.memo("flat-terms", build)


def _prefix_entries(sub: Subgraph, threshold: float) -> tuple[IntArray, IntArray]:
    """Each node's prefix: its |s| - ceil(t·|s|) + 1 rarest terms (by frequency among the visible
    nodes, then term id), as (node, term) entries. A pair with Jaccard ≥ t shares a prefix term."""
    nodes, ids = _flat_terms(sub)
    if not len(ids):
        return nodes, ids
    frequency = np.bincount(ids)
    order = np.lexsort((ids, frequency[ids], nodes))
    nodes, ids = nodes[order], ids[order]
    sizes = np.bincount(nodes, minlength=sub.n)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    rank = np.arange(len(nodes)) - starts[nodes]
    prefix = sizes - np.ceil(threshold * sizes - 1e-9).astype(np.int64) + 1
    keep = rank < prefix[nodes]
    return nodes[keep], ids[keep]


def _candidates(sub: Subgraph, threshold: float) -> set[tuple[int, int]]:
    """Node pairs of one type sharing a prefix term (groups of one, the usual case, cost nothing)."""
    nodes, ids = _prefix_entries(sub, threshold)
    types = sub.node_type[nodes].astype(np.int64)
    order = np.lexsort((nodes, ids, types))
    nodes, ids, types = nodes[order], ids[order], types[order]
    new_group = np.ones(len(nodes), dtype=np.bool_)
    new_group[1:] = (ids[1:] != ids[:-1]) | (types[1:] != types[:-1])
    bounds = np.append(np.flatnonzero(new_group), len(nodes))
    out: set[tuple[int, int]] = set()
    for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True):
        if hi - lo > 1:
            out.update(combinations(nodes[lo:hi].tolist(), 2))
    return out


def duplicate_pairs(sub: Subgraph, threshold: float) -> list[tuple[int, int, float]]:
    """All pairs (a < b) of one node type and polarity with Jaccard(term sets) ≥ threshold, but for
    a pair that consolidation already merged (one of them dormant)."""
    node_terms, polarity = sub.store.terms.node_terms, sub.store.polarity
    dormant = sub.dormant
    found = []
    for a, b in _candidates(sub, threshold):
        ra, rb = int(sub.rows[a]), int(sub.rows[b])
        if dormant[a] or dormant[b] or polarity.get(ra, ((), 0))[1] != polarity.get(rb, ((), 0))[1]:
            continue
        x, y = set(node_terms[ra]), set(node_terms[rb])
        shared = len(x & y)
        score = shared / (len(x) + len(y) - shared)
        if score >= threshold:
            found.append((min(a, b), max(a, b), score))
    return sorted(found)


def contradiction_pairs(sub: Subgraph) -> list[tuple[int, int]]:
    """Statement pairs that say the same thing with opposite polarity and lack a CONTRADICTS edge."""
    groups: dict[tuple[str, ...], tuple[list[int], list[int]]] = defaultdict(lambda: ([], []))
    candidates = np.flatnonzero(np.isin(sub.node_type, [int(t) for t in STATEMENT_TYPES]) & ~sub.retracted)
    polarity = sub.store.polarity
    for v in candidates.tolist():
        key, parity = polarity.get(int(sub.rows[v]), ((), 0))
        if key:
            groups[key][parity].append(v)
    mask = sub.edge_type == EdgeType.CONTRADICTS
    linked = set(zip(sub.src[mask].tolist(), sub.dst[mask].tolist(), strict=True))
    out = []
    for positive, negative in groups.values():
        for a in positive:
            for b in negative:
                if (a, b) not in linked and (b, a) not in linked:
                    out.append((min(a, b), max(a, b)))
    return sorted(out)


def consolidate(sub: Subgraph, query: ConsolidationQuery) -> Consolidation:
    """The dry-run report (processors/graph/apply.py applies it)."""
    conf = sub.confidence
    duplicates = []
    for a, b, score in duplicate_pairs(sub, query.threshold)[: query.limit]:
        keep, dup = (a, b) if (conf[a], sub.time_ms[a], -a) >= (conf[b], sub.time_ms[b], -b) else (b, a)
        duplicates.append(Duplicate(sub.node_id(keep), sub.node_id(dup), round(score, 6)))
    contradictions = [Contradiction(sub.node_id(a), sub.node_id(b), "same statement with opposite polarity")
                      for a, b in contradiction_pairs(sub)[: query.limit]]  # fmt: skip
    support = support_pairs(sub).support_count(sub.n)
    promote = (sub.node_type == NodeType.INFERENCE) & (conf > query.promote_confidence)
    promote &= support >= query.promote_support
    degree = np.diff(sub.out_ptr) + np.diff(sub.in_ptr)
    return Consolidation(
        duplicates,
        contradictions,
        [sub.node_id(v) for v in np.flatnonzero(promote)[: query.limit].tolist()],
        [sub.node_id(v) for v in np.flatnonzero(degree == 0)[: query.limit].tolist()],
    )


@dataclass(frozen=True, slots=True)
class DriftQuery:
    topic: str = ""
    min_relevance: float = 0.1  # share of the best BM25 score a node needs to count for the topic
    limit: int = 10


def _topics(sub: Subgraph, nodes: npt.NDArray[np.int64]) -> tuple[npt.NDArray[np.int64], list[str]]:
    """A topic id per node: SUPERSEDES components first, then sessions; and each topic's label."""
    mask = sub.edge_type == EdgeType.SUPERSEDES
    graph = csr_array((np.ones(int(mask.sum())), (sub.src[mask], sub.dst[mask])), shape=(sub.n, sub.n))
    _, component = csgraph.connected_components(graph, directed=True, connection="weak")
    chained = np.zeros(sub.n, dtype=np.bool_)
    chained[sub.src[mask]] = chained[sub.dst[mask]] = True
    labels: dict[tuple[str, int], int] = {}
    names: list[str] = []
    topic = np.empty(len(nodes), dtype=np.int64)
    for i, v in enumerate(nodes.tolist()):
        session = int(sub.session[v])
        key = ("chain", int(component[v])) if chained[v] else ("session", session)
        if key not in labels:
            labels[key] = len(names)
            names.append(sub.store.session_names[session] if key[0] == "session" and session >= 0 else "")
        topic[i] = labels[key]
    return topic, names


def drift(sub: Subgraph, query: DriftQuery) -> Drift:
    nodes = np.arange(sub.n)
    if query.topic:
        scores = bm25_scores(sub, TextQuery(query.topic))
        best = float(scores.max()) if sub.n else 0.0
        nodes = np.flatnonzero(scores >= max(best * query.min_relevance, 1e-12)) if best > 0 else nodes[:0]
    topic, names = _topics(sub, nodes)
    of_node = np.full(sub.n, -1, dtype=np.int64)
    of_node[nodes] = topic
    mask = (sub.edge_type == EdgeType.SUPERSEDES) & (of_node[sub.src] >= 0) & (of_node[sub.src] == of_node[sub.dst])
    new, old = sub.src[mask], sub.dst[mask]
    count = len(names)
    sizes = np.bincount(topic, minlength=count)
    superseded = np.zeros(sub.n, dtype=np.bool_)
    superseded[old] = True
    stable = np.bincount(topic, weights=(~superseded[nodes]).astype(np.float64), minlength=count)
    revisions = np.bincount(of_node[new], minlength=count)
    delta = (sub.confidence[new] - sub.confidence[old]).astype(np.float64)
    direction = np.bincount(of_node[new], weights=delta, minlength=count)
    times = sub.time_ms[nodes]
    first = np.full(count, np.iinfo(np.int64).max)
    last = np.zeros(count, dtype=np.int64)
    np.minimum.at(first, topic, times)
    np.maximum.at(last, topic, times)
    stability = stable / np.maximum(sizes, 1)
    order = sorted(range(count), key=lambda t: (stability[t], -revisions[t], t))[: query.limit]
    out = []
    for t in order:
        chosen = np.flatnonzero(of_node[new] == t)
        chosen = chosen[np.lexsort((chosen, sub.time_ms[new[chosen]]))]
        trajectory = [Supersession(sub.node_id(int(old[i])), sub.node_id(int(new[i])), int(sub.time_ms[new[i]]),
                                   round(float(delta[i]), 6)) for i in chosen]  # fmt: skip
        label = names[t] or (sub.store.texts[int(sub.rows[new[chosen[-1]]])] if len(chosen) else "")
        days = max((last[t] - first[t]) / DAY_MS, 1.0)
        out.append(TopicDrift(label, int(sizes[t]), round(float(stability[t]), 6),
                              round(float(direction[t] / revisions[t]), 6) if revisions[t] else 0.0,
                              round(float(revisions[t] / days), 6), trajectory))  # fmt: skip
    return Drift(out)
