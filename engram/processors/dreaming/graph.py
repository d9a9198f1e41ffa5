"""DreamGraph: one user's memory as the dreaming stages read it, folded from MemoryEvents.

A ``ChangeHandler`` over the user's engram.memory events, in offset order. Every change is applied
idempotently (set, not add), so an event seen twice (a redelivery, or dreaming's own output coming
back through the topic after dreaming applied it directly) changes nothing the second time.

What it keeps
- ``episodes``: the Trace's event nodes (turns): session, position ``(turn_index, node_id)``, time,
  role, text, provenance, the concepts they REF (A(v), the anchors of seed 000 eq. 5), whether they
  are dormant, and whether they are ``chained`` (ever had a NEXT edge; turns older than the Trace's
  session window never get one).
- ``concepts``: the Atlas concepts (V_concept): label text and whether they are committed
  (V_committed: the anchor of a consolidated node, through a CONSOLIDATES edge).
- ``causal_out`` / ``causal_in``: E_causal, cause -> effects and effect -> causes.
- ``next_edges``: the NEXT edges the log holds now (src, dst); ``contracted``: those dreaming added
  around dormant episodes (eq. 16, property ``contracted``).
- ``consolidated``: nodes dreaming made (gists, rules, entity profiles), with the episodes they cite;
  ``rejected``: candidates active dreaming rejected, with the support they were rejected on.
- ``facts``: the user's active facts (FactDecided ``store``/``replace`` activate; ``retract``/
  ``prune`` deactivate), with the turn ids they were extracted from, a fact stated again adding
  its turn (``skip_duplicate``); ``retracted_turns``: the turns whose facts belief revision has
  since retracted or replaced (what active dreaming checks candidates against).

JSON form: ``to_dict`` / ``from_dict`` round-trip it exactly (a Faust table holds it).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from engram.processors.retrieval.facts import ACTIVATES, DEACTIVATES
from engram.processors.trace.emit import CAUSAL, CONCEPT_KIND, EVENT_KIND, NEXT, REF
from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    FactDecided,
    Layer,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodeUpserted,
    RuleRejected,
)

CONSOLIDATES: Final = "CONSOLIDATES"  # consolidated node -> the concept it commits
CITES: Final = "CITES"  # consolidated node -> an episode it was abstracted from
ABOUT: Final = "ABOUT"  # entity profile -> an episode that mentions the entity
# Kinds of the nodes dreaming makes.
GIST_KIND: Final = "gist"
RULE_KIND: Final = "rule"
PROFILE_KIND: Final = "profile"
DREAM_KINDS: Final = frozenset({GIST_KIND, RULE_KIND, PROFILE_KIND})
SUPPORTS: Final = "skip_duplicate"  # the reconciler's decision for a fact stated again


@dataclass(slots=True)
class Episode:
    node_id: str
    session_id: str
    turn_index: int
    time_ms: int
    role: str
    turn_id: str
    text: str
    layer: Layer
    sources: list[EventRef]
    concepts: set[str] = field(default_factory=set)
    dormant: bool = False
    chained: bool = False

    @property
    def position(self) -> tuple[int, str]:
        """Total order inside the session, the Trace's NEXT order."""
        return (self.turn_index, self.node_id)


@dataclass(slots=True)
class Concept:
    node_id: str
    label: str
    committed: bool = False


@dataclass(slots=True)
class Consolidated:
    node_id: str
    kind: str
    text: str
    cites: set[str] = field(default_factory=set)
    anchors: set[str] = field(default_factory=set)


@dataclass(slots=True)
class ActiveFact:
    fact_id: str
    subject: str
    relation: str
    value: str
    category: str
    valid_from_ms: int
    turn_ids: list[str]


@dataclass(slots=True)
class DreamGraph(ChangeHandler):
    user_id: str
    episodes: dict[str, Episode] = field(default_factory=dict)
    concepts: dict[str, Concept] = field(default_factory=dict)
    causal_out: dict[str, set[str]] = field(default_factory=dict)
    causal_in: dict[str, set[str]] = field(default_factory=dict)
    next_edges: set[tuple[str, str]] = field(default_factory=set)
    contracted: set[tuple[str, str]] = field(default_factory=set)  # NEXT edges dreaming added (eq. 16)
    consolidated: dict[str, Consolidated] = field(default_factory=dict)
    facts: dict[str, ActiveFact] = field(default_factory=dict)
    retracted_turns: set[str] = field(default_factory=set)  # turn ids whose facts were revised since
    rejected: dict[str, set[str]] = field(default_factory=dict)  # candidate id -> the support it was rejected with
    # REF edges whose episode has not arrived yet (another batch's order): applied when it does.
    _early_refs: dict[str, set[str]] = field(default_factory=dict)

    def apply(self, events: Iterable[MemoryEvent]) -> None:
        for event in events:
            dispatch(event, self)

    # --- queries the stages use ------------------------------------------------------------

    def active(self) -> Iterator[Episode]:
        return (e for e in self.episodes.values() if not e.dormant)

    def session(self, session_id: str) -> list[Episode]:
        """The session's episodes (dormant ones too) in NEXT order."""
        found = [e for e in self.episodes.values() if e.session_id == session_id]
        return sorted(found, key=lambda e: e.position)

    def by_turn_id(self) -> dict[str, str]:
        """Turn id -> episode node id (facts cite turn ids)."""
        return {e.turn_id: e.node_id for e in self.episodes.values()}

    def committed(self) -> set[str]:
        return {c.node_id for c in self.concepts.values() if c.committed}

    # --- the fold --------------------------------------------------------------------------

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        kind, node_id, props = change["kind"], change["node_id"], change["properties"]
        if kind == EVENT_KIND and change["session_id"] is not None:
            old = self.episodes.get(node_id)
            episode = Episode(
                node_id,
                change["session_id"],
                int(props.get("turn_index", "0")),
                change["event_time_ms"],
                props.get("role", "user"),
                props.get("turn_id", node_id),
                change["text"],
                change["layer"],
                list(event["sources"]),
                set() if old is None else old.concepts,
                False if old is None else old.dormant,
                False if old is None else old.chained,
            )
            episode.concepts |= self._early_refs.pop(node_id, set())
            self.episodes[node_id] = episode
        elif kind == CONCEPT_KIND:
            concept = self.concepts.get(node_id)
            if concept is None:
                self.concepts[node_id] = Concept(node_id, change["text"])
            elif change["text"] and not concept.label:
                concept.label = change["text"]
        elif kind in DREAM_KINDS:
            known = self.consolidated.get(node_id)
            if known is None:
                self.consolidated[node_id] = Consolidated(node_id, kind, change["text"])
            else:
                known.text = change["text"]

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        node_id = change["node_id"]
        self.episodes.pop(node_id, None)
        self.concepts.pop(node_id, None)
        self.consolidated.pop(node_id, None)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        kind, src, dst = change["edge_type"], change["src"], change["dst"]
        if kind == NEXT:
            self.next_edges.add((src, dst))
            if change["properties"].get("contracted") == "true":
                self.contracted.add((src, dst))
            for node_id in (src, dst):
                if (episode := self.episodes.get(node_id)) is not None:
                    episode.chained = True
        elif kind == CAUSAL:
            self.causal_out.setdefault(src, set()).add(dst)
            self.causal_in.setdefault(dst, set()).add(src)
        elif kind == REF:
            episode = self.episodes.get(src)
            if episode is None:
                self._early_refs.setdefault(src, set()).add(dst)
            else:
                episode.concepts.add(dst)
        elif kind in (CONSOLIDATES, CITES, ABOUT) and (node := self.consolidated.get(src)) is not None:
            if kind == CONSOLIDATES:
                node.anchors.add(dst)
                if (concept := self.concepts.get(dst)) is not None:
                    concept.committed = True
            else:
                node.cites.add(dst)

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        kind, src, dst = change["edge_type"], change["src"], change["dst"]
        if kind == NEXT:
            self.next_edges.discard((src, dst))
            self.contracted.discard((src, dst))
        elif kind == CAUSAL:
            self.causal_out.get(src, set()).discard(dst)
            self.causal_in.get(dst, set()).discard(src)
        elif kind == REF and (episode := self.episodes.get(src)) is not None:
            episode.concepts.discard(dst)

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        if (episode := self.episodes.get(change["node_id"])) is not None:
            episode.dormant = True

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        if (episode := self.episodes.get(change["node_id"])) is not None:
            episode.dormant = False

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        decision = change["decision"].lower()
        known = self.facts.get(change["fact_id"])
        if decision in DEACTIVATES:
            if known is not None and decision == "retract":  # revised belief: its turns are contradicted
                self.retracted_turns.update(known.turn_ids)
            self.facts.pop(change["fact_id"], None)
        elif decision == SUPPORTS and known is not None:
            # The same fact said again: one more supporting turn (the recurring triples' support).
            known.turn_ids.extend(t for t in change["source_event_ids"] if t not in known.turn_ids)
        elif decision in ACTIVATES:
            if change["supersedes"] and (old := self.facts.pop(change["supersedes"], None)) is not None:
                self.retracted_turns.update(old.turn_ids)
            self.facts[change["fact_id"]] = ActiveFact(
                change["fact_id"],
                change["subject"],
                change["relation"],
                change["value"],
                change["category"],
                change["valid_from_ms"],
                list(change["source_event_ids"]),
            )

    def rule_rejected(self, event: MemoryEvent, change: RuleRejected) -> None:
        self.rejected[change["rule_id"]] = set(change["evidence_node_ids"])

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """A newer writer's change kind: nothing dreaming reads."""

    # --- JSON ------------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_id": self.user_id,
            "episodes": [_episode_row(e) for e in self.episodes.values()],
            "concepts": [[c.node_id, c.label, c.committed] for c in self.concepts.values()],
            "causal": sorted([src, dst] for src, dsts in self.causal_out.items() for dst in dsts),
            "next": sorted([src, dst] for src, dst in self.next_edges),
            "contracted": sorted([src, dst] for src, dst in self.contracted),
            "consolidated": [
                [n.node_id, n.kind, n.text, sorted(n.cites), sorted(n.anchors)] for n in self.consolidated.values()
            ],
            "facts": [
                [f.fact_id, f.subject, f.relation, f.value, f.category, f.valid_from_ms, list(f.turn_ids)]
                for f in self.facts.values()
            ],
            "early_refs": {k: sorted(v) for k, v in self._early_refs.items()},
            "retracted_turns": sorted(self.retracted_turns),
            "rejected": {k: sorted(v) for k, v in self.rejected.items()},
        }

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DreamGraph:
        graph = DreamGraph(str(data["user_id"]))
        for row in data["episodes"]:
            episode = _episode_of(row)
            graph.episodes[episode.node_id] = episode
        for node_id, label, committed in data["concepts"]:
            graph.concepts[node_id] = Concept(node_id, label, bool(committed))
        for src, dst in data["causal"]:
            graph.causal_out.setdefault(src, set()).add(dst)
            graph.causal_in.setdefault(dst, set()).add(src)
        graph.next_edges = {(src, dst) for src, dst in data["next"]}
        graph.contracted = {(src, dst) for src, dst in data.get("contracted", [])}
        for node_id, kind, text, cites, anchors in data["consolidated"]:
            graph.consolidated[node_id] = Consolidated(node_id, kind, text, set(cites), set(anchors))
        for fact_id, subject, relation, value, category, valid_from, turn_ids in data["facts"]:
            graph.facts[fact_id] = ActiveFact(fact_id, subject, relation, value, category, valid_from, list(turn_ids))
        graph._early_refs = {k: set(v) for k, v in data.get("early_refs", {}).items()}
        graph.retracted_turns = set(data.get("retracted_turns", []))
        graph.rejected = {k: set(v) for k, v in data.get("rejected", {}).items()}
        return graph


def _episode_row(e: Episode) -> list[Any]:
    sources = [[s["topic"], s["partition"], s["offset"]] for s in e.sources]
    return [e.node_id, e.session_id, e.turn_index, e.time_ms, e.role, e.turn_id, e.text, e.layer, sources,
            sorted(e.concepts), e.dormant, e.chained]  # fmt: skip


def _episode_of(row: list[Any]) -> Episode:
    node_id, session_id, turn_index, time_ms, role, turn_id, text, layer, sources, concepts, dormant, chained = row
    refs: list[EventRef] = [EventRef(topic=t, partition=p, offset=o) for t, p, o in sources]
    return Episode(node_id, session_id, turn_index, time_ms, role, turn_id, text, layer, refs, set(concepts),
                   dormant, chained)  # fmt: skip
