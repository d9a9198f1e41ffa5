"""Abstraction (seed 000 §5.2): candidate gists, rules and entity profiles, deterministic.

- **Gist** of a cluster: its ``gist_sentences`` most central sentences (TF-IDF centrality), in
  time order, citing every episode of the cluster; it commits the cluster's concept. A concept's
  gist is summarised recursively: its next dream ranks the sentences of the episodes the gist does
  not cite yet together with the gist's own central sentences (its CENTRAL property), each of those
  weighing for the episodes it stands for (``GistBasis``). So a dream costs what changed since the
  last one, not what the concept's whole history weighs; the first gist ranks every episode.
- **Rule**: an active fact whose supporting turns span at least ``min_rule_sessions`` sessions,
  generalized with its support: "Caroline likes hiking regularly (4 sessions)".
- **Profile**: one node per recurring entity (a capitalised name used in at least
  ``min_entity_episodes`` episodes over two or more sessions, capitalised inside a sentence at
  least once and never written in lower case, not a weekday or month: "Mel" is an entity, "Wow"
  and "Friday" are not), carrying its facts and most central sentences, ABOUT every episode that
  names it.

Each candidate keeps its support (the episodes it rests on) so active dreaming can test it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence, Set
from dataclasses import dataclass
from typing import Final

from engram.processors.dreaming.cluster import Cluster, Idf, Sentence, central, consolidated_id, sentences
from engram.processors.dreaming.config import DreamConfig
from engram.processors.dreaming.episode_index import NameCounts
from engram.processors.dreaming.graph import GIST_KIND, PROFILE_KIND, RULE_KIND, DreamGraph
from engram.processors.dreaming.rows import ActiveFact, Consolidated, Episode
from engram.processors.dreaming.text import split_sentences

_WEEKDAYS: Final = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_MONTHS: Final = ("january", "february", "march", "april", "may", "june", "july", "august", "september")
_CALENDAR: Final = frozenset((*_WEEKDAYS, *_MONTHS, "october", "november", "december", "today", "tomorrow"))
MAX_PROFILES: Final = 32
PROFILE_FACTS: Final = 8
Unchanged = Callable[[str, Set[str]], bool]  # (candidate node id, its support's ids): decided with already?


@dataclass(frozen=True, slots=True)
class GistBasis:
    """What a gist is ranked from: ``sentences`` with their ``mass`` in the centroid (empty: one
    each), and ``episodes``, those the sentences come from (what leave-one-out holds out)."""

    sentences: tuple[Sentence, ...]
    mass: tuple[float, ...]
    episodes: tuple[Episode, ...]

    def central(self, k: int, idf: Idf) -> list[Sentence]:
        return central(self.sentences, k, idf, self.mass)

    def without(self, node_id: str) -> GistBasis:
        """The basis with one episode held out."""
        kept = [i for i, s in enumerate(self.sentences) if s.node_id != node_id]
        mass = tuple(self.mass[i] for i in kept) if self.mass else ()
        episodes = tuple(e for e in self.episodes if e.node_id != node_id)
        return GistBasis(tuple(self.sentences[i] for i in kept), mass, episodes)


@dataclass(frozen=True, slots=True)
class Candidate:
    node_id: str
    kind: str
    subject: str  # the concept id, fact id or entity name it abstracts
    text: str
    support: tuple[Episode, ...]  # what it rests on, (time, id) order
    cites: tuple[str, ...]  # node ids it cites (CITES / ABOUT edges)
    sessions: int
    basis: GistBasis | None = None  # a gist's
    central: tuple[Sentence, ...] = ()  # a gist's chosen sentences


def never(node_id: str, ids: Set[str]) -> bool:
    """An ``Unchanged`` that builds every candidate."""
    return False


def gist(graph: DreamGraph, cluster: Cluster, config: DreamConfig, idf: Idf) -> Candidate | None:
    node_id = consolidated_id(graph.user_id, GIST_KIND, cluster.anchor)
    basis = gist_basis(graph, cluster.members, graph.consolidated.get(node_id))
    chosen = basis.central(config.gist_sentences, idf)
    if not chosen:
        return None
    sessions = len({m.session_id for m in cluster.members})
    head = f"Gist ({len(cluster.members)} episodes, {sessions} sessions)"
    text = f"{head}: " + " ".join(s.text for s in chosen)
    members = tuple(cluster.members)
    cites = tuple(m.node_id for m in members)
    return Candidate(node_id, GIST_KIND, cluster.anchor, text, members, cites, sessions, basis, tuple(chosen))


def gist_basis(graph: DreamGraph, members: Sequence[Episode], prior: Consolidated | None) -> GistBasis:
    """The members' sentences when the concept has no gist yet (or one that names no central
    sentences: written before they were kept); else the sentences of the members the gist does not
    cite yet and the gist's central sentences, each with the mass of the episodes it summarised."""
    held = _central_sentences(graph, prior.central) if prior is not None else []
    if prior is None or not held:
        return GistBasis(tuple(sentences(members)), (), tuple(members))
    new = [m for m in members if m.node_id not in prior.cites]
    summarised = max(1.0, (len(members) - len(new)) / len(held))
    fresh = sentences(new)
    group = tuple(held + fresh)
    episodes = {e.node_id: e for e in [*(graph.episodes[s.node_id] for s in held), *new]}
    ordered = tuple(sorted(episodes.values(), key=lambda e: (e.time_ms, e.node_id)))
    return GistBasis(group, (summarised,) * len(held) + (1.0,) * len(fresh), ordered)


def _central_sentences(graph: DreamGraph, refs: Iterable[str]) -> list[Sentence]:
    """The sentences a gist's CENTRAL property names, those whose episode the graph still holds."""
    out: list[Sentence] = []
    for ref in refs:
        node_id, _, index = ref.rpartition("#")
        episode = graph.episodes.get(node_id)
        said = split_sentences(episode.text) if episode is not None else ()
        if episode is not None and index.isdigit() and int(index) < len(said):
            text, words = said[int(index)]
            out.append(Sentence(text, node_id, episode.time_ms, words, int(index)))
    return out


def rules(graph: DreamGraph, at_ms: int, config: DreamConfig, *, unchanged: Unchanged = never) -> list[Candidate]:
    """A rule per active fact stated in at least ``min_rule_sessions`` sessions by ``at_ms``, but
    none whose support ``unchanged`` (node id, support ids) says it was decided with already."""
    by_turn, episodes = graph.index.by_turn, graph.episodes
    out: list[Candidate] = []
    for fact in sorted(graph.facts.values(), key=lambda f: f.fact_id):
        node_id = consolidated_id(graph.user_id, RULE_KIND, fact.fact_id)
        found = {i: episodes[i] for t in fact.turn_ids if (i := by_turn.get(t)) is not None and i in episodes}
        ids = {i for i, e in found.items() if e.time_ms <= at_ms}
        if unchanged(node_id, ids):
            continue
        support = _in_time_order(found[i] for i in ids)
        sessions = len({e.session_id for e in support})
        if sessions < config.min_rule_sessions:
            continue
        text = f"{fact.subject} {fact.relation.replace('_', ' ')} {fact.value} regularly ({sessions} sessions)"
        cites = tuple(e.node_id for e in support)
        out.append(Candidate(node_id, RULE_KIND, fact.fact_id, text, support, cites, sessions))
    return out


def entities(graph: DreamGraph, at_ms: int, config: DreamConfig) -> dict[str, tuple[Episode, ...]]:
    """Recurring entity names and the episodes that use them (at most ``MAX_PROFILES``, most used
    first, ties by name)."""
    return {name: episodes_of(graph, ids) for name, ids in entity_uses(graph, at_ms, config).items()}


def entity_uses(graph: DreamGraph, at_ms: int, config: DreamConfig) -> dict[str, Set[str]]:
    """``entities``, each with the ids of the episodes that use it (the episodes read only when needed)."""
    index = graph.index
    if index.covers(at_ms):
        counts = index.names
    else:  # episodes after the dream's time: left out
        counts = NameCounts.of(e for e in graph.episodes.values() if e.time_ms <= at_ms)
    named = [name for name, ids in counts.uses.items() if len(ids) >= config.min_entity_episodes
             and _named_only(name, counts)]  # fmt: skip
    chosen: list[str] = []
    for name in sorted(named, key=lambda n: (-len(counts.uses[n]), n)):
        if _in_two_sessions(graph, counts.uses[name]):
            chosen.append(name)
            if len(chosen) == MAX_PROFILES:
                break
    return {name: counts.uses[name].keys() for name in sorted(chosen)}


def episodes_of(graph: DreamGraph, ids: Iterable[str]) -> tuple[Episode, ...]:
    """The graph's episodes of ``ids``, in (time, id) order."""
    return _in_time_order(graph.episodes[i] for i in ids)


def _named_only(name: str, counts: NameCounts) -> bool:
    """Capitalised inside a sentence at least once, never written in lower case, not a weekday or month."""
    key = name.lower()
    return key not in counts.words and key not in _CALENDAR and name in counts.inside


def _in_two_sessions(graph: DreamGraph, ids: Iterable[str]) -> bool:
    first = None
    for i in ids:
        session = graph.episodes[i].session_id
        if first is None:
            first = session
        elif session != first:
            return True
    return False


def profile(graph: DreamGraph, name: str, episodes: tuple[Episode, ...], config: DreamConfig, idf: Idf) -> Candidate:
    facts = [f for f in graph.facts.values() if _mentions(f, name)][:PROFILE_FACTS]
    said = [s for s in sentences(episodes) if name in s.text]
    chosen = central(said, config.gist_sentences, idf)
    sessions = len({e.session_id for e in episodes})
    parts = [f"{name}: named in {len(episodes)} episodes over {sessions} sessions."]
    if facts:
        stated = "; ".join(f"{f.subject} {f.relation.replace('_', ' ')} {f.value}" for f in facts)
        parts.append(f"Facts: {stated}.")
    parts.extend(s.text for s in chosen)
    node_id = consolidated_id(graph.user_id, PROFILE_KIND, name.lower())
    cites = tuple(e.node_id for e in episodes)
    return Candidate(node_id, PROFILE_KIND, name, " ".join(parts), episodes, cites, sessions)


def _mentions(fact: ActiveFact, name: str) -> bool:
    lowered = name.lower()
    return lowered in fact.subject.lower().split() or lowered in fact.value.lower().split()


def _in_time_order(episodes: Iterable[Episode]) -> tuple[Episode, ...]:
    return tuple(sorted(episodes, key=lambda e: (e.time_ms, e.node_id)))


def session_count(episodes: Iterable[Episode]) -> int:
    return len({e.session_id for e in episodes})


def sessions_without_each(episodes: Sequence[Episode]) -> list[int]:
    """For each episode, how many sessions the others span (leave-one-out, in one pass)."""
    per: dict[str, int] = {}
    for e in episodes:
        per[e.session_id] = per.get(e.session_id, 0) + 1
    return [len(per) - (per[e.session_id] == 1) for e in episodes]
