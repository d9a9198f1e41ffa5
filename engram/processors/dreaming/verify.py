"""Active dreaming (seed 000 §5.2): a candidate is kept only if it survives two counterfactual tests.

1. **Leave-one-out support.** The candidate must still hold with any one of its supporting
   episodes held out: a gist re-derived without the episode keeps one of its central sentences
   that the episode did not say; a rule keeps ``min_rule_sessions`` sessions; a profile keeps
   ``min_entity_episodes`` episodes over two sessions. A candidate that rests on one episode fails.
2. **Belief revision.** Its supports are checked against the facts as they stand now: an episode
   whose facts belief revision has since retracted or replaced (``DreamGraph.retracted_turns``) no
   longer supports anything. A gist that would repeat such an episode is rejected (the concept then
   stays uncommitted, so its episodes stay active: nothing superseded is consolidated); a rule or a
   profile is tested again on its remaining supports.

Every rejection carries a stable code (``REJECTIONS``) and a reason a person can read. The gist's
leave-one-out runs over what the gist was ranked from (its ``GistBasis``: the episodes new since
the concept's last gist and that gist's central sentences) and holds out every episode that
contributed a central sentence and up to ``MAX_HELD_OUT`` others, evenly spaced (the test is
quadratic in the basis's sentences).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from engram.processors.dreaming.abstract import Candidate, GistBasis, session_count, sessions_without_each
from engram.processors.dreaming.cluster import Idf, sentences
from engram.processors.dreaming.config import DreamConfig
from engram.processors.dreaming.graph import GIST_KIND, RULE_KIND, DreamGraph
from engram.processors.dreaming.rows import Episode

LEAVE_ONE_OUT: Final = "leave-one-out"
CONTRADICTED: Final = "contradicted"
REJECTIONS: Final = (LEAVE_ONE_OUT, CONTRADICTED)
MAX_HELD_OUT: Final = 16


@dataclass(frozen=True, slots=True)
class Rejection:
    candidate: Candidate
    code: str
    reason: str


def verify(graph: DreamGraph, candidate: Candidate, config: DreamConfig, idf: Idf) -> Rejection | None:
    """None when the candidate is kept, else why not."""
    revised = [e for e in candidate.support if e.turn_id in graph.retracted_turns]
    if candidate.kind == GIST_KIND:
        if revised:
            turns = ", ".join(e.turn_id for e in revised[:3])
            return Rejection(candidate, CONTRADICTED, f"supports revised since by belief revision: {turns}")
        basis = candidate.basis or GistBasis(tuple(sentences(candidate.support)), (), candidate.support)
        return _gist_loo(candidate, basis, config, idf)
    kept = tuple(e for e in candidate.support if e.turn_id not in graph.retracted_turns)
    if candidate.kind == RULE_KIND:
        need, floor = config.min_rule_sessions, 0
    else:
        need, floor = 2, config.min_entity_episodes
    for held, sessions in zip(kept, sessions_without_each(kept), strict=True):
        if sessions < need or len(kept) - 1 < floor:
            code = CONTRADICTED if revised else LEAVE_ONE_OUT
            rest = [e for e in kept if e is not held]
            return Rejection(candidate, code, _support_reason(held, rest, need, floor, len(revised)))
    if not kept:
        return Rejection(candidate, CONTRADICTED, f"all {len(revised)} supports revised by belief revision")
    return None


def _gist_loo(candidate: Candidate, basis: GistBasis, config: DreamConfig, idf: Idf) -> Rejection | None:
    k = config.gist_sentences
    chosen = candidate.central or tuple(basis.central(k, idf))
    for held in _held_out(basis.episodes, {s.node_id for s in chosen}):
        others = {s.text for s in chosen if s.node_id != held.node_id}
        again = {s.text for s in basis.without(held.node_id).central(k, idf)}
        if not others & again:
            reason = f"without episode {held.turn_id} none of the gist's other central sentences stays central"
            return Rejection(candidate, LEAVE_ONE_OUT, reason)
    return None


def _held_out(support: tuple[Episode, ...], contributors: set[str]) -> list[Episode]:
    first = [e for e in support if e.node_id in contributors]
    rest = [e for e in support if e.node_id not in contributors]
    step = max(1, len(rest) // MAX_HELD_OUT)
    return first + rest[::step][:MAX_HELD_OUT]


def _support_reason(held: Episode, rest: list[Episode], sessions: int, episodes: int, revised: int) -> str:
    left = f"{len(rest)} episodes over {session_count(rest)} sessions"
    needed = f"needs {sessions} sessions" + (f" and {episodes} episodes" if episodes else "")
    extra = f" ({revised} supports revised by belief revision)" if revised else ""
    return f"without episode {held.turn_id}: {left}; {needed}{extra}"
