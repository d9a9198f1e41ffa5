"""DreamGraph: one user's memory as the dreaming stages read it, folded from MemoryEvents.

A ``ChangeHandler`` over the user's engram.memory events, in offset order. Every change is applied
idempotently (set, not add), so an event seen twice (a redelivery, or dreaming's own output coming
back through the topic after dreaming applied it directly) changes nothing the second time.

What it keeps
- ``episodes``: the Trace's event nodes (turns): session, position ``(turn_index, node_id)``, time,
  role, text, provenance, the concepts they REF (A(v), the anchors of seed 000 eq. 5), whether they
  are dormant, whether they are ``chained`` (ever had a NEXT edge; turns older than the Trace's
  session window never get one), and their last access (NodesAccessed: the latest compiled context
  that held them; pruning ages them from it).
- ``concepts``: the Atlas concepts (V_concept): label text and whether they are committed
  (V_committed: the anchor of a consolidated node, through a CONSOLIDATES edge); stored in chunks by
  arrival (``concept_chunks``).
- ``causal_out`` / ``causal_in``: E_causal, cause -> effects and effect -> causes.
- ``next_edges``: the NEXT edges the log holds now (src, dst); ``contracted``: those dreaming added
  around dormant episodes (eq. 16, property ``contracted``).
- ``consolidated``: nodes dreaming made (gists, rules, entity profiles), with the episodes they cite;
  ``rejected``: candidates active dreaming rejected, with the support they were rejected on.
- ``facts``: the user's active facts (FactDecided ``store``/``replace`` activate; ``retract``/
  ``prune`` deactivate), with the turn ids they were extracted from, a fact stated again adding
  its turn (``skip_duplicate``); ``retracted_turns``: the turns whose facts belief revision has
  since retracted or replaced (what active dreaming checks candidates against).

``eligibility`` (derived) sees every event after the fold, for pruning (processors/dreaming/eligibility.py).
JSON form: ``to_dict`` / ``from_dict`` round-trip it exactly. A Faust table holds it in parts
(processors/dreaming/records.py): each episode belongs to a chunk of ``CHUNK_EPISODES`` by arrival (rows.py),
and the fold notes which chunks (``dirty``), which chunks of what dreaming made (``made``, made.py)
and which of their citations (``cited``) changed, so a batch rewrites what it changed, not the
user's whole history.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Final

from engram.processors.dreaming.chunks import IdChunks, concept_chunk
from engram.processors.dreaming.edges import ABOUT as ABOUT
from engram.processors.dreaming.edges import CITES as CITES
from engram.processors.dreaming.edges import CONSOLIDATES as CONSOLIDATES
from engram.processors.dreaming.eligibility import Eligibility
from engram.processors.dreaming.episode_index import EpisodeIndex
from engram.processors.dreaming.made import (
    CONTRACTED_ITEM,
    NODE_ITEM,
    REJECTED_ITEM,
    Cite,
    CitedChunks,
    made_chunk,
    made_key,
)
from engram.processors.dreaming.rows import (
    ActiveFact,
    Concept,
    Consolidated,
    Episode,
    chunk_of,
    episode_of,
    episode_row,
    said_of,
)
from engram.processors.dreaming.text import SentenceFrequencies
from engram.processors.retrieval.facts import ACTIVATES, DEACTIVATES
from engram.processors.trace.emit import CAUSAL, CONCEPT_KIND, EVENT_KIND, NEXT, REF
from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    FactDecided,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodesAccessed,
    NodeUpserted,
    RuleRejected,
)

# Kinds of the nodes dreaming makes.
GIST_KIND: Final = "gist"
RULE_KIND: Final = "rule"
PROFILE_KIND: Final = "profile"
DREAM_KINDS: Final = frozenset({GIST_KIND, RULE_KIND, PROFILE_KIND})
SUPPORTS: Final = "skip_duplicate"  # the reconciler's decision for a fact stated again
# A gist node's property naming its central sentences ("<episode id>#<sentence index>", space-separated):
# the next dream of its concept starts from them (processors/dreaming/abstract.py).
CENTRAL: Final = "central"


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
    arrivals: int = 0  # episodes ever placed (their chunks follow arrival)
    # Derived lookups over the episodes (sentence frequencies among them), so not in the JSON form.
    index: EpisodeIndex = field(default_factory=EpisodeIndex, compare=False, repr=False)
    # Derived indexes: each chunk's episodes, NEXT edges by source; what changed since the last write.
    members: dict[int, dict[str, None]] = field(default_factory=dict, compare=False, repr=False)  # arrival order
    next_out: dict[str, set[str]] = field(default_factory=dict, compare=False, repr=False)
    # Sources of NEXT or CAUSAL edges that were not episodes when last seen (a superset of those
    # that are not now: `loose_sources`), so the head record need not diff every edge against the
    # episodes on each write.
    loose: set[str] = field(default_factory=set, compare=False, repr=False)
    dirty: set[int] = field(default_factory=set, compare=False, repr=False)
    # The chunks whose episodes' uses (last access) changed: their small use parts are written, not
    # the episodes' chunks (records.py), so a first use does not rewrite 64 episodes' texts.
    used: set[int] = field(default_factory=set, compare=False, repr=False)
    made: IdChunks = field(default_factory=lambda: IdChunks(made_chunk()), compare=False, repr=False)  # by chunk
    cited: CitedChunks = field(default_factory=CitedChunks, compare=False, repr=False)  # their citations, by chunk
    concept_chunks: IdChunks = field(default_factory=lambda: IdChunks(concept_chunk()), compare=False, repr=False)
    journal: ChangeHandler | None = field(default=None, compare=False, repr=False)
    eligibility: Eligibility = field(default_factory=Eligibility, compare=False, repr=False)  # eq. 15's standing

    def apply(self, events: Iterable[MemoryEvent]) -> None:
        for event in events:
            if self.journal is not None:  # a dream's: what the event changes is kept first (dreaming/checkpoint.py)
                dispatch(event, self.journal)
            dispatch(event, self)
            dispatch(event, self.eligibility)

    # --- queries the stages use ------------------------------------------------------------

    def active(self) -> Iterator[Episode]:
        return (e for e in self.episodes.values() if not e.dormant)

    def session(self, session_id: str) -> list[Episode]:
        """The session's episodes (dormant ones too) in NEXT order (ties in arrival order)."""
        found = [self.episodes[i] for i in self.index.by_session.get(session_id, ())]
        return sorted(found, key=lambda e: (e.position, e.arrival))

    @property
    def frequencies(self) -> SentenceFrequencies:
        return self.index.frequencies

    def committed(self) -> set[str]:
        return {c.node_id for c in self.concepts.values() if c.committed}

    # --- the fold --------------------------------------------------------------------------

    def holds_turn(self, event: MemoryEvent, change: NodeUpserted) -> bool:
        """True when the episode a turn's upsert places is held already, exactly as it says: a
        second copy of an event applied before (a batch derived again after a crash, its first
        derivation delivered but its state not written)."""
        held = self.episodes.get(change["node_id"])
        return held is not None and held.said == said_of(event, change)

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        kind, node_id, props = change["kind"], sys.intern(change["node_id"]), change["properties"]
        if kind == EVENT_KIND and change["session_id"] is not None:
            old = self.episodes.get(node_id)
            episode = Episode(
                node_id,
                *said_of(event, change),
                set() if old is None else old.concepts,
                False if old is None else old.dormant,
                False if old is None else old.chained,
                self._arrive(node_id) if old is None else old.arrival,
                -1 if old is None else old.last_access_ms,
            )
            episode.concepts |= self._early_refs.pop(node_id, set())
            self.episodes[node_id] = episode
            self.loose.discard(node_id)
            self.dirty.add(episode.chunk)
            self.index.place(episode, old)
        elif kind == CONCEPT_KIND:
            concept = self.concepts.get(node_id)
            if concept is None:
                self.concepts[node_id] = Concept(node_id, change["text"])
                self.concept_chunks.add(node_id)
            elif change["text"] and not concept.label:
                concept.label = change["text"]
                self.concept_chunks.touch(node_id)
        elif kind in DREAM_KINDS:
            self._made_node(node_id, kind, change["text"], tuple(props.get(CENTRAL, "").split()))

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        node_id = change["node_id"]
        if (episode := self.episodes.pop(node_id, None)) is not None:
            self.index.remove(episode)
            self.members.get(episode.chunk, {}).pop(node_id, None)
            self.dirty.add(episode.chunk)
            self.note_source(node_id)
        if (node := self.consolidated.get(node_id)) is not None:
            self.made.discard(made_key(NODE_ITEM, node_id))
            self.cited.drop({(node_id, cited) for cited in node.cites})
        if self.concepts.pop(node_id, None) is not None:
            self.concept_chunks.discard(node_id)
        self.consolidated.pop(node_id, None)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        kind, src, dst = change["edge_type"], sys.intern(change["src"]), sys.intern(change["dst"])  # one copy of an id
        if kind == NEXT:
            self.next_edges.add((src, dst))
            self.next_out.setdefault(src, set()).add(dst)
            self.note_source(src)
            if change["properties"].get("contracted") == "true" and (src, dst) not in self.contracted:
                self.contracted.add((src, dst))
                self.made.touch(made_key(CONTRACTED_ITEM, src, dst))
            for node_id in (src, dst):
                if (episode := self.episodes.get(node_id)) is not None:
                    episode.chained = True
                    self.changed(episode)
        elif kind == CAUSAL:
            self.causal_out.setdefault(src, set()).add(dst)
            self.causal_in.setdefault(dst, set()).add(src)
            self.note_source(src)
            self._touch(src)
        elif kind == REF:
            episode = self.episodes.get(src)
            if episode is None:
                self._early_refs.setdefault(src, set()).add(dst)
            else:
                episode.concepts.add(dst)
                self.index.refer(src, dst)
                self.changed(episode)
        elif kind == CONSOLIDATES and (node := self.consolidated.get(src)) is not None:
            if dst not in node.anchors:
                node.anchors.add(dst)
                self.made.touch(made_key(NODE_ITEM, src))
            if (concept := self.concepts.get(dst)) is not None and not concept.committed:
                concept.committed = True
                self.concept_chunks.touch(dst)
        elif kind in (CITES, ABOUT) and (node := self.consolidated.get(src)) is not None and dst not in node.cites:
            node.cites.add(dst)
            self.cited.add((src, dst))

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        kind, src, dst = change["edge_type"], change["src"], change["dst"]
        if kind == NEXT:
            self.next_edges.discard((src, dst))
            self.next_out.get(src, set()).discard(dst)
            if (src, dst) in self.contracted:
                self.contracted.discard((src, dst))
                self.made.discard(made_key(CONTRACTED_ITEM, src, dst))
            self._touch(src)
        elif kind == CAUSAL:
            self.causal_out.get(src, set()).discard(dst)
            self.causal_in.get(dst, set()).discard(src)
            self._touch(src)
        elif kind == REF and (episode := self.episodes.get(src)) is not None:
            episode.concepts.discard(dst)
            self.index.unrefer(src, dst)
            self.changed(episode)

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        if (episode := self.episodes.get(change["node_id"])) is not None:
            episode.dormant = True
            self.changed(episode)

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        if (episode := self.episodes.get(change["node_id"])) is not None:
            episode.dormant = False
            self.changed(episode)

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        """A compiled context held these nodes (`use`)."""
        self.use(change["node_ids"], event["event_time_ms"])

    def use(self, node_ids: Iterable[str], at_ms: int) -> bool:
        """Each episode's last access moves to ``at_ms`` when that is at least ``ACCESS_STEP_MS``
        later (so an access applied twice changes nothing); whether one moved."""
        moved = False
        for node_id in node_ids:
            episode = self.episodes.get(node_id)
            if episode is not None and episode.moved_by(at_ms):
                episode.last_access_ms = at_ms
                self.used.add(episode.chunk)
                moved = True
        return moved

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
            self.facts[change["fact_id"]] = ActiveFact(change["fact_id"], change["subject"], change["relation"],
                                                       change["value"], change["category"], change["valid_from_ms"],
                                                       list(change["source_event_ids"]))  # fmt: skip

    def rule_rejected(self, event: MemoryEvent, change: RuleRejected) -> None:
        support = set(change["evidence_node_ids"])
        if self.rejected.get(change["rule_id"]) != support:
            self.rejected[change["rule_id"]] = support
            self.made.touch(made_key(REJECTED_ITEM, change["rule_id"]))

    def _made_node(self, node_id: str, kind: str, text: str, central: tuple[str, ...]) -> None:
        """A node dreaming made, upserted: its item is written when it is new or what it says changed
        (a dream upserts each gist it revisits, and its echo comes back through the topic)."""
        known = self.consolidated.get(node_id)
        if known is None:
            self.consolidated[node_id] = Consolidated(node_id, kind, text, central=central)
        elif (known.text, known.central) == (text, central):
            return
        else:
            known.text, known.central = text, central
        self.made.touch(made_key(NODE_ITEM, node_id))

    def _arrive(self, node_id: str) -> int:
        """A new episode's arrival (its chunk follows from it)."""
        arrival = self.arrivals
        self.arrivals += 1
        self.members.setdefault(chunk_of(arrival), {})[node_id] = None
        return arrival

    def note_source(self, node_id: str) -> None:
        """``node_id`` is the source of a NEXT or CAUSAL edge, or was an episode that left."""
        if node_id not in self.episodes:
            self.loose.add(node_id)

    def loose_sources(self) -> list[str]:
        """The sources of NEXT or CAUSAL edges that are not episodes, sorted (those that are
        episodes again, or hold no edge any more, are let go)."""
        self.loose = {
            s for s in self.loose if s not in self.episodes and (self.next_out.get(s) or self.causal_out.get(s))
        }
        return sorted(self.loose)

    def changed(self, episode: Episode) -> None:
        """A field of ``episode``'s row changed: its kept row is stale and its chunk is written."""
        episode.row = None
        self.dirty.add(episode.chunk)

    def _touch(self, node_id: str) -> None:
        """An edge out of ``node_id`` changed: its episode's chunk holds it (else the head record)."""
        if (episode := self.episodes.get(node_id)) is not None:
            self.dirty.add(episode.chunk)

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """A newer writer's change kind: nothing dreaming reads."""

    # --- JSON ------------------------------------------------------------------------------

    def to_dict(self, parts: tuple[str, ...] = ()) -> dict[str, Any]:
        """The JSON form (only the named ``parts`` when given; each costs what it holds)."""
        wanted = parts or _PARTS
        return {name: _PARTS[name](self) for name in wanted}

    @staticmethod
    def from_dict(data: dict[str, Any]) -> DreamGraph:
        graph = DreamGraph(str(data["user_id"]))
        for i, row in enumerate(data["episodes"]):
            episode = episode_of(row, i)
            graph.episodes[episode.node_id] = episode
            graph.index.place(episode)
            graph.members.setdefault(episode.chunk, {})[episode.node_id] = None
            graph.arrivals = max(graph.arrivals, episode.arrival + 1)
        graph.arrivals = max(graph.arrivals, int(data.get("arrivals", 0)))  # absent in older states
        for node_id, label, committed in data["concepts"]:
            graph.concepts[node_id] = Concept(node_id, label, bool(committed))
        for src, dst in data["causal"]:
            graph.causal_out.setdefault(src, set()).add(dst)
            graph.causal_in.setdefault(dst, set()).add(src)
        graph.next_edges = {(src, dst) for src, dst in data["next"]}
        for src, dst in graph.next_edges:
            graph.next_out.setdefault(src, set()).add(dst)
        graph.loose = (graph.next_out.keys() | graph.causal_out.keys()) - graph.episodes.keys()
        graph.contracted = {(src, dst) for src, dst in data.get("contracted", [])}
        for node_id, kind, text, cites, anchors, *central in data["consolidated"]:  # older states: no central
            graph.consolidated[node_id] = Consolidated(
                node_id, kind, text, set(cites), set(anchors), tuple(central[0] if central else ())
            )
        for fact_id, subject, relation, value, category, valid_from, turn_ids in data["facts"]:
            graph.facts[fact_id] = ActiveFact(fact_id, subject, relation, value, category, valid_from, list(turn_ids))
        graph._early_refs = {k: set(v) for k, v in data.get("early_refs", {}).items()}
        graph.retracted_turns = set(data.get("retracted_turns", []))
        graph.rejected = {k: set(v) for k, v in data.get("rejected", {}).items()}
        graph.made = IdChunks.in_order(graph.made_items(), made_chunk())
        graph.cited = CitedChunks.in_order(graph.cite_items())
        graph.concept_chunks = IdChunks.in_order(graph.concepts, concept_chunk())
        return graph

    def made_items(self) -> Iterator[str]:
        """The items of what dreaming made (made.py): its nodes, rejected candidates and
        contracted edges, in the JSON form's order."""
        yield from (made_key(NODE_ITEM, node_id) for node_id in self.consolidated)
        yield from (made_key(REJECTED_ITEM, rule_id) for rule_id in self.rejected)
        yield from (made_key(CONTRACTED_ITEM, src, dst) for src, dst in sorted(self.contracted))

    def cite_items(self) -> Iterator[Cite]:
        """The citations of what dreaming made (made.CitedChunks), node by node."""
        for node in self.consolidated.values():
            yield from ((node.node_id, cited) for cited in sorted(node.cites))


def consolidated_row(node: Consolidated) -> list[Any]:
    return [node.node_id, node.kind, node.text, sorted(node.cites), sorted(node.anchors), list(node.central)]


# The parts of the JSON form, each from the graph.
_PARTS: Final[dict[str, Callable[[DreamGraph], Any]]] = {
    "user_id": lambda g: g.user_id,
    "episodes": lambda g: [episode_row(e) for e in g.episodes.values()],
    "concepts": lambda g: [[c.node_id, c.label, c.committed] for c in g.concepts.values()],
    "causal": lambda g: sorted([src, dst] for src, dsts in g.causal_out.items() for dst in dsts),
    "next": lambda g: sorted([src, dst] for src, dst in g.next_edges),
    "contracted": lambda g: sorted([src, dst] for src, dst in g.contracted),
    "consolidated": lambda g: [consolidated_row(n) for n in g.consolidated.values()],
    "facts": lambda g: [
        [f.fact_id, f.subject, f.relation, f.value, f.category, f.valid_from_ms, list(f.turn_ids)]
        for f in g.facts.values()
    ],  # fmt: skip
    "early_refs": lambda g: {k: sorted(v) for k, v in g._early_refs.items()},
    "retracted_turns": lambda g: sorted(g.retracted_turns),
    "rejected": lambda g: {k: sorted(v) for k, v in g.rejected.items()},
    "arrivals": lambda g: g.arrivals,
}
