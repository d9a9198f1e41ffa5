"""Clustering → abstraction → active dreaming → integration, as MemoryEvents (seed 000 Table 2).

``consolidate`` proposes candidates (a gist per changed cluster, rules from recurring facts,
profiles of recurring entities: processors/dreaming/abstract.py), tests each (verify.py) and
integrates what survives:
- a node of kind ``gist``, ``rule`` or ``profile`` (USER layer of the user; its text is embedded by
  whoever indexes it), with CITES edges to the episodes it abstracts (ABOUT for a profile);
- for a gist, a CONSOLIDATES edge to its concept: the concept is now committed (V_committed);
- for a rule, a RuleCommitted (the audit record: its reason and evidence) before the node;
- for a rejected candidate, a RuleRejected naming the stage and the reason.
Provenance: each edge event cites its episode's source events, a node event the first
``MAX_SOURCES`` of its supports'. A candidate is proposed again only when its support changed
since it was integrated or rejected, so an unchanged memory dreams nothing new.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Callable, Set
from dataclasses import dataclass, field
from functools import partial
from typing import Final

from engram.processors.dreaming.abstract import Candidate, entity_uses, episodes_of, gist, profile, rules
from engram.processors.dreaming.cluster import Cluster, Idf, clusters, consolidated_id
from engram.processors.dreaming.config import DreamConfig
from engram.processors.dreaming.graph import (
    ABOUT,
    CENTRAL,
    CITES,
    CONSOLIDATES,
    GIST_KIND,
    PROFILE_KIND,
    RULE_KIND,
    DreamGraph,
)
from engram.processors.dreaming.verify import Rejection, verify
from engram.schemas.events import edge_upserted, memory_event, node_upserted, rule_committed, rule_rejected
from engram.schemas.records import (
    EDGE_UPSERTED,
    NODE_UPSERTED,
    RULE_COMMITTED,
    RULE_REJECTED,
    ChangeRecord,
    EventRef,
    MemoryEvent,
)

MAX_SOURCES: Final = 32
STAGE: Final = "active-dreaming"


@dataclass(slots=True)
class Consolidation:
    events: list[MemoryEvent] = field(default_factory=list)
    clusters: list[Cluster] = field(default_factory=list)
    kept: list[Candidate] = field(default_factory=list)
    rejected: list[Rejection] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Kept candidates by kind."""
        return dict(sorted(Counter(c.kind for c in self.kept).items()))

    def rejections(self) -> dict[str, int]:
        """Rejected candidates by reason code."""
        return dict(sorted(Counter(r.code for r in self.rejected).items()))


def consolidate(graph: DreamGraph, at_ms: int, config: DreamConfig, *, count: Callable[[str], int]) -> Consolidation:
    """Propose, verify and integrate at ``at_ms``; the events are applied to ``graph``."""
    out = Consolidation(clusters=clusters(graph, at_ms, config))
    idf = Idf.over(graph.frequencies)
    user = graph.user_id
    unchanged = partial(_unchanged, graph)
    # Only candidates whose support changed, and built only then: a profile ranks every episode naming its entity.
    candidates = [g for c in out.clusters
                  if not unchanged(consolidated_id(user, GIST_KIND, c.anchor), {m.node_id for m in c.members})
                  and (g := gist(graph, c, config, idf)) is not None]  # fmt: skip
    candidates += rules(graph, at_ms, config, unchanged=unchanged)
    candidates += [profile(graph, name, episodes_of(graph, ids), config, idf)
                   for name, ids in entity_uses(graph, at_ms, config).items()
                   if not unchanged(consolidated_id(user, PROFILE_KIND, name.lower()), ids)]  # fmt: skip
    for candidate in candidates:  # one node id each (kind and subject), so no integration changes another's check
        rejection = verify(graph, candidate, config, idf)
        if rejection is None:
            out.kept.append(candidate)
            known = graph.consolidated.get(candidate.node_id)
            events = integrate(graph.user_id, candidate, at_ms, count, cited=known.cites if known else set())
        else:
            out.rejected.append(rejection)
            events = [_rejected(graph.user_id, rejection, at_ms)]
        graph.apply(events)
        out.events.extend(events)
    return out


def integrate(
    user_id: str, c: Candidate, at_ms: int, count: Callable[[str], int], *, cited: Set[str] = frozenset()
) -> list[MemoryEvent]:
    """The events that commit a kept candidate (see the module docstring); CITES/ABOUT edges only to
    the episodes not ``cited`` already (an upsert would change nothing)."""
    layer = c.support[0].layer
    sources = _sources(c)
    events: list[MemoryEvent] = []
    if c.kind == RULE_KIND:
        reason = f"kept: holds with any one of its {len(c.support)} supports held out ({c.sessions} sessions)"
        committed = rule_committed(c.node_id, c.text, reason, list(c.cites))
        events.append(_event(user_id, at_ms, sources, RULE_COMMITTED, committed))
    properties = {"stage": "integration", "subject": c.subject, "support": str(len(c.support)),
                  "sessions": str(c.sessions), "dreamed_at_ms": str(at_ms)}  # fmt: skip
    if c.central:
        properties[CENTRAL] = " ".join(s.ref for s in c.central)
    node = node_upserted(c.node_id, c.kind, layer, at_ms, text=c.text, tokens=count(c.text), user_id=user_id,
                         properties=properties)  # fmt: skip
    events.append(_event(user_id, at_ms, sources, NODE_UPSERTED, node))
    if c.kind == GIST_KIND:
        edge = edge_upserted(CONSOLIDATES, c.node_id, c.subject, layer)
        events.append(_event(user_id, at_ms, sources, EDGE_UPSERTED, edge))
    edge_type = ABOUT if c.kind == PROFILE_KIND else CITES
    for episode in (e for e in c.support if e.node_id not in cited):
        edge = edge_upserted(edge_type, c.node_id, episode.node_id, layer)
        events.append(_event(user_id, at_ms, list(episode.sources), EDGE_UPSERTED, edge))
    return events


def _rejected(user_id: str, r: Rejection, at_ms: int) -> MemoryEvent:
    c = r.candidate
    change = rule_rejected(c.node_id, c.text, f"{STAGE}:{r.code}", r.reason, list(c.cites))
    return _event(user_id, at_ms, _sources(c), RULE_REJECTED, change)


def _unchanged(graph: DreamGraph, node_id: str, ids: Set[str]) -> bool:
    """Whether a candidate rests only on episodes it was integrated or rejected with."""
    known = graph.consolidated.get(node_id)
    if known is not None and ids <= known.cites:
        return True
    return ids <= graph.rejected.get(node_id, set())


def _sources(c: Candidate) -> list[EventRef]:
    refs = {(s["topic"], s["partition"], s["offset"]): s for e in c.support for s in e.sources}
    return [refs[k] for k in heapq.nsmallest(MAX_SOURCES, refs)]  # sorted()[:n], without sorting every support's


def _event(user_id: str, at_ms: int, sources: list[EventRef], kind: str, change: ChangeRecord) -> MemoryEvent:
    return memory_event(user_id, at_ms, sources, kind, change, f"dream@{at_ms}")
