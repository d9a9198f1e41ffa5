"""Cognitive queries (seed 004 §4.5-4.7): belief revision, gap detection, analogy.

- Belief revision (Algorithm 1), read-only: retract the target and propagate along the support
  relation (processors/graph/support.py). A node falls when every one of its supporters has
  fallen; it is affected when any has. Counting each node's remaining supporters makes the
  cascade independent of visiting order (a node is never judged before all its fallen supporters
  are known), which the seed's queue order does not guarantee.
- Gap detection: the five kinds of §4.6, vectorized over the subgraph; "now" for stale evidence
  is the latest event time the principal can see, so a replay reports the same gaps and nodes
  the principal cannot see change nothing.
- Analogy (eq. 4): 0.6 × cosine of structural fingerprints (in-degree, out-degree, the seven
  edge-type counts) + 0.4 × content similarity (cosine of embeddings where both have one, token
  Jaccard otherwise); top 5.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from engram.processors.graph.results import Affected, Analogies, Analogy, Gap, Gaps, Revision
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.support import support_pairs
from engram.processors.graph.types import NODE_TYPE_NAMES, EdgeType, NodeType
from engram.processors.retrieval.text import terms

DAY_MS = 86_400_000
GAP_KINDS = ("unjustified_decision", "single_source_inference", "low_confidence_foundation",
             "unstable_knowledge", "stale_evidence")  # fmt: skip


def revise(sub: Subgraph, target: int) -> Revision:
    pairs = support_pairs(sub)
    remaining = pairs.support_count(sub.n).copy()
    lost = np.zeros(sub.n, dtype=np.int64)
    depth = {target: 0}
    fallen = {target}
    queue = deque([target])
    while queue:
        u = queue.popleft()
        for w in pairs.dependents(u).tolist():
            if w in fallen:
                continue
            depth.setdefault(w, depth[u] + 1)
            remaining[w] -= 1
            lost[w] += 1
            if remaining[w] == 0:
                fallen.add(w)
                queue.append(w)
    affected = []
    for w in sorted(depth, key=lambda v: (depth[v], v)):
        if w == target:
            continue
        total = lost[w] + remaining[w]
        falls = w in fallen
        loss = float(sub.confidence[w]) * (1.0 if falls else lost[w] / total)
        affected.append(Affected(sub.node_id(w), NODE_TYPE_NAMES[sub.node_type[w]], depth[w], round(loss, 6), falls))
    by_type = {t: [a.node_id for a in affected if a.falls and a.node_type == NODE_TYPE_NAMES[t]]
               for t in (NodeType.INFERENCE, NodeType.DECISION)}  # fmt: skip
    impact = round(sum(a.confidence_loss for a in affected), 6)
    return Revision(sub.node_id(target), affected, by_type[NodeType.INFERENCE], by_type[NodeType.DECISION], impact)


@dataclass(frozen=True, slots=True)
class GapQuery:
    confidence_threshold: float = 0.5
    stale_days: float = 30.0
    now_ms: int | None = None
    limit: int = 100


def supersede_chain(sub: Subgraph, cap: int = 32) -> npt.NDArray[np.int64]:
    """Per node, the edges of the longest SUPERSEDES chain through it (cycles capped at ``cap``)."""
    mask = sub.edge_type == EdgeType.SUPERSEDES
    new, old = sub.src[mask], sub.dst[mask]
    down = np.zeros(sub.n, dtype=np.int64)  # longest chain of newer versions above the node
    up = np.zeros(sub.n, dtype=np.int64)  # longest chain of older versions below it
    for _ in range(cap):
        before = down.copy(), up.copy()
        np.maximum.at(down, old, np.minimum(down[new] + 1, cap))
        np.maximum.at(up, new, np.minimum(up[old] + 1, cap))
        if np.array_equal(before[0], down) and np.array_equal(before[1], up):
            break
    return down + up


def _gap_rows(sub: Subgraph, query: GapQuery) -> list[tuple[int, str, float, str]]:
    pairs = support_pairs(sub)
    support_in = pairs.support_count(sub.n)
    types, conf = sub.node_type, sub.confidence.astype(np.float64)
    out: list[tuple[int, str, float, str]] = []
    for v in np.flatnonzero((types == NodeType.DECISION) & (support_in == 0)).tolist():
        out.append((v, GAP_KINDS[0], 0.9, "decision with no recorded evidence (no SUPPORTS or CAUSED_BY)"))
    for v in np.flatnonzero((types == NodeType.INFERENCE) & (support_in == 1)).tolist():
        out.append((v, GAP_KINDS[1], 0.7, "inference drawn from a single piece of evidence"))
    s, d = pairs.supporter, pairs.supported
    weak = (conf[s] < query.confidence_threshold) & (conf[d] > conf[s])
    gap = np.zeros(sub.n)
    np.maximum.at(gap, s[weak], conf[d[weak]] - conf[s[weak]])
    for v in np.flatnonzero(gap > 0).tolist():
        text = f"confidence {conf[v]:.2f} supports a belief held at up to {conf[v] + gap[v]:.2f}"
        out.append((v, GAP_KINDS[2], round(0.5 + 0.5 * float(gap[v]), 6), text))
    chain = supersede_chain(sub)
    for v in np.flatnonzero(chain + 1 > 2).tolist():
        out.append((v, GAP_KINDS[3], round(min(1.0, 0.2 * float(chain[v])), 6),
                    f"belief revised {int(chain[v])} times along its SUPERSEDES chain"))  # fmt: skip
    now = query.now_ms if query.now_ms is not None else (int(sub.time_ms.max()) if sub.n else 0)
    horizon = query.stale_days * DAY_MS
    active_decision = (types == NodeType.DECISION) & ~sub.retracted
    old = (now - sub.time_ms) > horizon
    stale = np.zeros(sub.n, dtype=np.bool_)
    stale[s[old[s] & active_decision[d]]] = True
    for v in np.flatnonzero(stale).tolist():
        age = (now - int(sub.time_ms[v])) / DAY_MS
        severity = round(0.5 + 0.5 * min(1.0, (age - query.stale_days) / query.stale_days), 6)
        out.append((v, GAP_KINDS[4], severity, f"evidence {age:.0f} days old still supports an active decision"))
    return out


def gaps(sub: Subgraph, query: GapQuery) -> Gaps:
    rows = _gap_rows(sub, query)
    counts = dict.fromkeys(GAP_KINDS, 0)
    for _, kind, _, _ in rows:
        counts[kind] += 1
    rows.sort(key=lambda r: (-r[2], GAP_KINDS.index(r[1]), r[0]))
    return Gaps([Gap(sub.node_id(v), kind, sev, text) for v, kind, sev, text in rows[: query.limit]], counts)


def fingerprints(sub: Subgraph) -> npt.NDArray[np.float64]:
    """n × 9: in-degree, out-degree, then the count of incident edges of each of the 7 types."""

    def build() -> npt.NDArray[np.float64]:
        out = np.zeros((sub.n, 2 + len(EdgeType)))
        out[:, 0] = np.diff(sub.in_ptr)
        out[:, 1] = np.diff(sub.out_ptr)
        out[:, 2:] = sub.typed_degree()
        return out

    return sub.memo("fingerprints", build)


def _cosines(matrix: npt.NDArray[np.float64], row: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    norms = np.linalg.norm(matrix, axis=1) * float(np.linalg.norm(row))
    cosines: npt.NDArray[np.float64] = np.divide(matrix @ row, norms, out=np.zeros(len(matrix)), where=norms > 0)
    return cosines


def content_similarity(sub: Subgraph, anchor: int) -> npt.NDArray[np.float64]:
    """Cosine of embeddings where anchor and node both have one; token Jaccard elsewhere."""
    store = sub.store
    row = int(sub.rows[anchor])
    overlap = np.zeros(sub.n)
    for term in set(terms(store.texts[row])):
        rows, _ = store.terms.arrays(term)
        local = sub.local[rows]
        overlap += np.bincount(local[local >= 0], minlength=sub.n)
    sizes = store.terms.lengths(len(store), distinct=True)[sub.rows].astype(np.float64)
    union = sizes + sizes[anchor] - overlap
    jaccard = np.divide(overlap, union, out=np.zeros(sub.n), where=union > 0)
    vectors, has = store.vectors.take(sub.rows, len(store))
    if not has[anchor]:
        return np.asarray(jaccard, dtype=np.float64)
    cos = (vectors @ vectors[anchor]).astype(np.float64)
    return np.asarray(np.where(has, cos, jaccard), dtype=np.float64)


def analogy(sub: Subgraph, anchor: int, limit: int = 5) -> Analogies:
    prints = fingerprints(sub)
    structural = _cosines(prints, prints[anchor])
    content = content_similarity(sub, anchor)
    score = 0.6 * structural + 0.4 * content
    score[anchor] = -np.inf
    candidates = np.arange(sub.n)[np.isfinite(score)]
    top = candidates[np.lexsort((candidates, -score[candidates]))][:limit]
    matches = [Analogy(sub.node_id(int(v)), NODE_TYPE_NAMES[sub.node_type[v]], round(float(structural[v]), 6),
                       round(float(content[v]), 6), round(float(score[v]), 6)) for v in top]  # fmt: skip
    return Analogies(sub.node_id(anchor), matches)
