"""Forgetting with invariants (seed 000 §5.3): eq. 15, the NEXT contraction of eq. 16, re-awakening.

- ``phi``: eq. 15 exactly. An episode may go dormant iff (1) every concept it REFs is committed,
  (2) it has no outgoing CAUSAL edge, and (3) its age at the dream's time exceeds T_decay. Its age
  counts from its last access when it has one (a compiled context held it: NodesAccessed), else
  from its time: use it or lose it (seed 001 eq. 3). The verdict names every condition that fails.
- ``prune``: every active episode φ allows goes dormant (NodeDormant, with the reason), and its
  session's timeline is contracted around it (eq. 16): its nearest active neighbours are linked
  directly by a NEXT edge marked ``contracted``, so NEXT stays a total order over the active
  episodes. As eq. 16 says, the edge is *added*: the dormant episode keeps its own edges, which no
  traversal of the active graph follows (its endpoint is dormant), and which the archive keeps.
- ``reawaken`` / ``restore_edges``: a re-awakened episode is put back between its nearest active
  neighbours: the contracted edge spanning it is removed, and its own edges were never gone.
  No edge of a dormant node (NEXT, CAUSAL, REF, CITES, ABOUT) is ever removed, so a re-awakened node
  has exactly the edges it had, and re-awakening every dormant node leaves exactly the original
  NEXT edges (every contracted edge removed).
- ``check_invariants``: Invariant 1 (per session, the NEXT edges between active chained episodes
  form one path through all of them in order) and Invariant 2 (no dormant episode is a causal
  parent of an active node).

Only ``chained`` episodes (those the Trace linked with NEXT; it does not link turns older than its
session window) take part in the timeline. Every emitted event is applied to the graph at once.
Event ids derive from the user, the node, the dream time and the source turn, so a replay emits
byte-identical events.
"""

from __future__ import annotations

import bisect
from collections.abc import Collection, Iterable, Set
from dataclasses import dataclass, field
from typing import Final

from engram.processors.dreaming.config import DreamConfig
from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.rows import Episode
from engram.processors.trace.emit import NEXT
from engram.schemas.events import edge_removed, edge_upserted, memory_event, node_dormant, node_reawakened
from engram.schemas.records import EDGE_REMOVED, EDGE_UPSERTED, NODE_DORMANT, NODE_REAWAKENED, ChangeRecord, MemoryEvent

UNCOMMITTED: Final = "uncommitted-concept"
CAUSAL_OUT: Final = "outgoing-causal"
TOO_RECENT: Final = "too-recent"
CONTRACTED: Final = "dream-contraction"
RESTORED: Final = "reawakened"
REASONS: Final = (UNCOMMITTED, CAUSAL_OUT, TOO_RECENT)  # the conditions of eq. 15, in a verdict's order


@dataclass(frozen=True, slots=True)
class Verdict:
    """φ(v): ``eligible`` iff ``failing`` is empty; ``failing`` names each condition that fails."""

    node_id: str
    failing: tuple[str, ...]

    @property
    def eligible(self) -> bool:
        return not self.failing


def phi(graph: DreamGraph, episode: Episode, at_ms: int, config: DreamConfig) -> Verdict:
    """Eq. 15 for one episode at the dream's event time ``at_ms``."""
    concepts = graph.concepts
    committed = {c for c in episode.concepts if c in concepts and concepts[c].committed}
    causes = {episode.node_id} if graph.causal_out.get(episode.node_id) else set()
    fails = _conditions(episode, committed, causes, at_ms - config.decay_ms)
    return Verdict(episode.node_id, tuple(reason for reason, fail in zip(REASONS, fails, strict=True) if fail))


def _conditions(episode: Episode, committed: Set[str], causes: Set[str], recent_from_ms: int) -> tuple[bool, ...]:
    """Whether each condition of eq. 15 fails for ``episode``, in ``REASONS`` order: ``committed``, the
    committed concepts (a missing concept is not committed); ``causes``, the nodes with an outgoing
    causal edge; ``recent_from_ms``, the dream's time less T_decay."""
    return not episode.concepts <= committed, episode.node_id in causes, episode.aged_from_ms >= recent_from_ms


def _eligible(graph: DreamGraph, at_ms: int, config: DreamConfig) -> tuple[list[Episode], dict[str, int]]:
    """The active episodes φ allows at ``at_ms``, and how many it holds for each failing condition,
    read from where each stands (processors/dreaming/eligibility.py)."""
    if not graph.index.covers(at_ms):  # episodes after the dream's time: left out
        return _scanned(graph, at_ms, config)
    standing, recent_from_ms = graph.eligibility, at_ms - config.decay_ms
    standing.settle(graph)
    eligible = [graph.episodes[n] for n in standing.free if standing.active[n].time_ms < recent_from_ms]
    return eligible, _held(standing.uncommitted, standing.causal, standing.too_recent(recent_from_ms))


def _scanned(graph: DreamGraph, at_ms: int, config: DreamConfig) -> tuple[list[Episode], dict[str, int]]:
    """``_eligible`` by judging every active episode up to ``at_ms``."""
    committed, recent_from_ms = graph.committed(), at_ms - config.decay_ms
    causes = {node for node, effects in graph.causal_out.items() if effects}
    eligible: list[Episode] = []
    uncommitted = causal = recent = 0
    for episode in graph.episodes.values():
        if episode.dormant or episode.time_ms > at_ms:
            continue
        u, c, r = _conditions(episode, committed, causes, recent_from_ms)
        uncommitted, causal, recent = uncommitted + u, causal + c, recent + r
        if not (u or c or r):
            eligible.append(episode)
    return eligible, _held(uncommitted, causal, recent)


def _held(uncommitted: int, causal: int, recent: int) -> dict[str, int]:
    """How many active episodes each failing condition holds, by reason (those holding any)."""
    held = {UNCOMMITTED: uncommitted, CAUSAL_OUT: causal, TOO_RECENT: recent}
    return {reason: n for reason, n in sorted(held.items()) if n}


@dataclass(slots=True)
class Pruned:
    """What ``prune`` did: its events, the episodes it made dormant, and how many active episodes
    stay active for each reason (an episode counts under every reason that holds it)."""

    events: list[MemoryEvent] = field(default_factory=list)
    dormant: list[str] = field(default_factory=list)
    held: dict[str, int] = field(default_factory=dict)


def prune(graph: DreamGraph, at_ms: int, config: DreamConfig, *, key: str) -> Pruned:
    """Make every episode φ allows dormant, in (session, position) order, contracting NEXT. φ reads
    nothing a dormancy changes, so every verdict is taken first and only the eligible are ordered."""
    out = Pruned()
    eligible, out.held = _eligible(graph, at_ms, config)
    chains = _chains(graph, {e.session_id for e in eligible}) if eligible else {}
    for episode in sorted(eligible, key=lambda e: (e.session_id, e.position)):
        reason = (
            f"eq. 15 at {at_ms}: all {len(episode.concepts)} referenced concepts committed, no outgoing "
            f"causal edge, age {at_ms - episode.aged_from_ms} ms > T_decay {config.decay_ms} ms"
        )
        events = [_event(key, at_ms, episode, NODE_DORMANT, node_dormant(episode.node_id, reason))]
        graph.apply(events)
        events += _apply(
            graph, _timeline_edits(graph, chains.get(episode.session_id, []), episode), key, at_ms, episode
        )
        out.events.extend(events)
        out.dormant.append(episode.node_id)
    return out


def reawaken(graph: DreamGraph, node_id: str, at_ms: int, reason: str, *, key: str) -> list[MemoryEvent]:
    """NodeReawakened for a dormant episode and the NEXT edits that put it back; [] if not dormant."""
    episode = graph.episodes.get(node_id)
    if episode is None or not episode.dormant:
        return []
    events = [_event(key, at_ms, episode, NODE_REAWAKENED, node_reawakened(node_id, reason))]
    graph.apply(events)
    return events + restore_edges(graph, node_id, at_ms, key=key)


def restore_edges(graph: DreamGraph, node_id: str, at_ms: int, *, key: str) -> list[MemoryEvent]:
    """The NEXT edits that make the session's timeline right around ``node_id`` (after someone else
    re-awakened it); idempotent: nothing when the edges are already right."""
    episode = graph.episodes.get(node_id)
    if episode is None:
        return []
    chain = [e for e in graph.session(episode.session_id) if e.chained]
    return _apply(graph, _timeline_edits(graph, chain, episode), key, at_ms, episode)


def _chains(graph: DreamGraph, sessions: set[str]) -> dict[str, list[Episode]]:
    """The sessions' chained episodes in NEXT order (dormant ones included)."""
    return {session: [e for e in graph.session(session) if e.chained] for session in sessions}


Edits = tuple[set[tuple[str, str]], dict[tuple[str, str], bool]]


def _timeline_edits(graph: DreamGraph, chain: list[Episode], episode: Episode) -> Edits:
    """(edges to remove, edges to add) so that the NEXT edges between the active episodes of
    ``episode``'s stretch of its session (from its nearest active chained neighbour before to the
    one after) are exactly their consecutive pairs. A dormant episode's own edges stay; an edge
    dreaming contracted is removed once it no longer links two active neighbours."""
    if not episode.chained:
        return set(), {}
    at = bisect.bisect_left(chain, episode.position, key=lambda e: e.position)
    lo, hi = at - 1, at + 1
    while lo >= 0 and chain[lo].dormant:
        lo -= 1
    while hi < len(chain) and chain[hi].dormant:
        hi += 1
    stretch = [e.node_id for e in chain[max(lo, 0) : hi + 1]]
    active = [e.node_id for e in chain[max(lo, 0) : hi + 1] if not e.dormant]
    wanted = set(zip(active, active[1:], strict=False))
    between = {(s, d) for s in stretch for d in stretch if (s, d) in graph.next_edges}
    present = {(s, d) for s, d in between if (s in active and d in active) or (s, d) in graph.contracted}
    adjacent = set(zip(stretch, stretch[1:], strict=False))
    return present - wanted, {edge: edge not in adjacent for edge in sorted(wanted - present)}


def _apply(graph: DreamGraph, edits: Edits, key: str, at_ms: int, cause: Episode) -> list[MemoryEvent]:
    """The edits as events (an added edge that skips a dormant episode is marked ``contracted``)."""
    removed, added = edits
    why = CONTRACTED if cause.dormant else RESTORED
    events = [_event(key, at_ms, cause, EDGE_REMOVED, edge_removed(NEXT, s, d, why)) for s, d in sorted(removed)]
    for (src, dst), contracted in added.items():
        props = {"contracted": "true"} if contracted else None
        edge = edge_upserted(NEXT, src, dst, cause.layer, properties=props)
        events.append(_event(key, at_ms, cause, EDGE_UPSERTED, edge))
    graph.apply(events)
    return events


def _event(key: str, at_ms: int, episode: Episode, kind: str, change: ChangeRecord) -> MemoryEvent:
    return memory_event(key, at_ms, list(episode.sources), kind, change, f"dream@{at_ms}")


def check_invariants(graph: DreamGraph, dormant: Collection[str] | None = None) -> list[str]:
    """Violations of Invariants 1 and 2 (seed 000 §5.3.1); empty when both hold. Over the whole
    graph; or, given ``dormant`` (the episodes a dream made dormant), over what the dream changed:
    Invariant 1 over their sessions (whose NEXT edges it edited), Invariant 2 over them."""
    if dormant is None:
        timelines = {s: graph.session(s) for s in {e.session_id for e in graph.episodes.values()}}
        touching = _touching(graph, timelines.keys())
        parents = [e.node_id for e in graph.episodes.values() if e.dormant]
    else:
        timelines = {s: graph.session(s) for s in {graph.episodes[n].session_id for n in dormant}}
        touching = {s: {(e.node_id, d) for e in timeline for d in graph.next_out.get(e.node_id, ())}
                    for s, timeline in timelines.items()}  # fmt: skip
        parents = [n for n in dormant if graph.episodes[n].dormant]
    violations: list[str] = []
    for session in sorted(timelines):
        violations.extend(_timeline_violations(session, timelines[session], touching.get(session, set())))
    for parent in parents:
        for effect in sorted(graph.causal_out.get(parent, ())):
            child = graph.episodes.get(effect)
            if child is None or not child.dormant:
                violations.append(f"I2: dormant {parent} is a causal parent of active {effect}")
    return violations


def _touching(graph: DreamGraph, sessions: Set[str]) -> dict[str, set[tuple[str, str]]]:
    """Each session's NEXT edges with an end among its episodes."""
    touching: dict[str, set[tuple[str, str]]] = {}
    for src, dst in graph.next_edges:
        for node in (src, dst):
            if (known := graph.episodes.get(node)) is not None and known.session_id in sessions:
                touching.setdefault(known.session_id, set()).add((src, dst))
    return touching


def _timeline_violations(session: str, episodes: list[Episode], edges: set[tuple[str, str]]) -> Iterable[str]:
    dormant = {e.node_id for e in episodes if e.dormant}
    active = [e.node_id for e in episodes if e.chained and not e.dormant]
    wanted = set(zip(active, active[1:], strict=False))
    live = {(s, d) for s, d in edges if s not in dormant and d not in dormant}
    if live != wanted:
        yield f"I1: session {session} NEXT is not one path over its active episodes ({len(live ^ wanted)} edges differ)"
