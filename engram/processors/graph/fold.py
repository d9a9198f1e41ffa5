"""MemoryEvents → GraphStore: the same events that feed the view feed the graph engine.

Besides the edges the events carry, the fold derives the seed's reasoning edges that Engram's
events imply (processors/graph/types.py has the mapping):
- a stored fact: each source turn SUPPORTS it; a replacement SUPERSEDES the fact it replaced;
- a duplicate the rules skipped: its source turns SUPPORT the fact it repeated (more support);
- a retraction: the retracting turn CONTRADICTS the fact, which stays in the graph, retracted,
  so its history (supersession chains, drift) remains queryable; a pruned fact is removed;
- a committed rule: each evidence node SUPPORTS it.
Derived edge ids are uuid5 of (type, src, dst), as every Engram edge id: the graph sink writes the
same edges (sinks/graph/plan.py) and replays give the same rows.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from engram.processors.embedding.vectors import node_vector
from engram.processors.graph.store import GraphStore, NodeSpec
from engram.processors.graph.types import DEFAULT_CONFIDENCE, EdgeType, NodeType, edge_type_of, node_type_of
from engram.processors.retrieval.facts import SCOPE_LAYERS
from engram.processors.retrieval.storage import one_layer
from engram.processors.trace.builder import event_node_id
from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.events import node_upserted, stable_id
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    FactDecided,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodeUpserted,
    RuleCommitted,
    SubjectErased,
)

_STORES = frozenset({"store", "replace", "promote"})


def derived_edge_id(edge_type: EdgeType, src: str, dst: str) -> str:
    return stable_id("edge", edge_type.name, src, dst)


def fact_edges(fact: FactDecided) -> list[tuple[EdgeType, str, str]]:
    """The reasoning edges a fact decision implies: (type, src, dst), src ≠ dst."""
    decision = fact["decision"].lower()
    fact_id = fact["fact_id"]
    turns = [event_node_id(fact["user_id"], turn) for turn in fact["source_event_ids"]]
    edges: list[tuple[EdgeType, str, str]] = []
    if decision in _STORES or decision == "skip_duplicate":
        edges += [(EdgeType.SUPPORTS, turn, fact_id) for turn in turns]
    if decision in _STORES and fact["supersedes"]:
        edges.append((EdgeType.SUPERSEDES, fact_id, fact["supersedes"]))
    elif decision == "retract":
        edges += [(EdgeType.CONTRADICTS, turn, fact_id) for turn in turns]
    return [(edge_type, src, dst) for edge_type, src, dst in edges if src != dst]


def rule_confidence(evidence: int) -> float:
    """A committed rule's confidence: each independent piece of evidence halves the doubt."""
    return 1.0 - 0.5 ** max(1, evidence)


def _confidence(node_type: NodeType, properties: dict[str, str]) -> float:
    try:
        return min(1.0, max(0.0, float(properties["confidence"])))
    except (KeyError, ValueError):
        return DEFAULT_CONFIDENCE[node_type]


class GraphFold(ChangeHandler):
    """A `ChangeHandler` applying each change to the store; ``pending`` collects the rows that
    arrived without a vector (the engine embeds them in one batch)."""

    __slots__ = ("pending", "store")

    def __init__(self, store: GraphStore) -> None:
        self.store = store
        self.pending: list[int] = []

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        props = change["properties"]
        node_type = node_type_of(change["kind"], props)
        spec = NodeSpec(
            node_type,
            one_layer(change["layer"]),
            change["user_id"],
            change["session_id"],
            _confidence(node_type, props),
            change["event_time_ms"],
            change["text"],
            change.get("instance"),
        )
        vector = node_vector(change)
        # One copy of the ids and kinds the store's rows and the view name (a decoded event has its own).
        node_id, kind = sys.intern(change["node_id"]), sys.intern(change["kind"])
        row = self.store.add_node(node_id, spec, vector, kind)
        self.store.keep_record(row, {**change, "embedding": None, "vector": None})
        if vector is None and change["text"]:
            self.pending.append(row)

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.store.remove_node(change["node_id"])

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        self.store.flag(change["node_id"], dormant=True)

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        self.store.flag(change["node_id"], dormant=False)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        edge_type, reverse = edge_type_of(change["edge_type"])
        src, dst = sys.intern(change["src"]), sys.intern(change["dst"])
        src, dst = (dst, src) if reverse else (src, dst)
        self.store.add_edge(change["edge_id"], src, dst, edge_type, change["weight"])

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        self.store.remove_edge(change["edge_id"])

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        decision = change["decision"].lower()
        if decision in _STORES:
            self._store_fact(change)
        elif decision == "retract":
            self.store.flag(change["fact_id"], retracted=True)
        elif decision == "prune":
            self.store.remove_node(change["fact_id"])
        for edge_type, src, dst in fact_edges(change):
            self.store.add_edge(derived_edge_id(edge_type, src, dst), src, dst, edge_type)

    def rule_committed(self, event: MemoryEvent, change: RuleCommitted) -> None:
        evidence = change["evidence_node_ids"]
        spec = NodeSpec(
            NodeType.INFERENCE,
            "USER",
            event["key"],
            None,
            rule_confidence(len(evidence)),
            event["event_time_ms"],
            change["text"],
        )
        row = self.store.add_node(change["rule_id"], spec, kind="rule")
        self.store.keep_record(row, node_upserted(change["rule_id"], "rule", "USER", event["event_time_ms"],
                                                  text=change["text"], user_id=event["key"],
                                                  properties={"reason": change["reason"]}))  # fmt: skip
        self.pending.append(row)
        self._link(EdgeType.SUPPORTS, evidence, change["rule_id"])

    def subject_erased(self, event: MemoryEvent, change: SubjectErased) -> None:
        self.store.erase_owner(change["user_id"])

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """A change kind this version does not know carries nothing the graph can use."""

    def _store_fact(self, fact: FactDecided) -> None:
        if fact["supersedes"]:
            node_type = NodeType.CORRECTION
        elif fact["category"] == "task":
            node_type = NodeType.DECISION
        else:
            node_type = NodeType.FACT
        text = f"{fact['subject']} {fact['relation']} {fact['value']}"
        layer = SCOPE_LAYERS.get(fact["scope"].lower(), "USER")
        spec = NodeSpec(node_type, layer, fact["user_id"], None, fact["confidence"], fact["valid_from_ms"], text)
        self.store.add_node(fact["fact_id"], spec, kind="fact")
        self.store.flag(fact["fact_id"], retracted=False)
        self.pending.append(self.store.index[fact["fact_id"]])

    def _link(self, edge_type: EdgeType, sources: Iterable[str], dst: str) -> None:
        for src in sources:
            if src != dst:
                self.store.add_edge(derived_edge_id(edge_type, src, dst), src, dst, edge_type)


def apply_events(store: GraphStore, events: Iterable[MemoryEvent]) -> list[int]:
    """Fold events into the store, in order; returns the rows to embed."""
    fold = GraphFold(store)
    for event in events:
        dispatch(event, fold)
    return fold.pending
