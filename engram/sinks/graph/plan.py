"""Turn a batch of MemoryEvents into graph writes, coalesced per node, edge and fact id.

Folding keeps the result of applying the events one by one, and the writes are then applied in a
fixed order (node removals, node upserts per label, facts, dormancy flags, edge removals and edge
upserts per type):

- a NodeRemoved drops earlier pending writes of that node and earlier pending edges touching it
  (a DETACH DELETE would have removed them); writes after it in the batch stay;
- the last upsert of a node, an edge or a fact wins (it carries the whole state);
- a dormancy flag rides on a pending upsert, else it updates a stored node;
- FactDecided upserts a ``:Fact`` (never deleted; ``status`` says retracted/pruned) with an ABOUT
  edge to its ``:User`` node and the reasoning edges its decision implies (`fact_edges`): SUPPORTS
  from its source turns, SUPERSEDES to the fact it replaces, CONTRADICTS from a retracting turn;
- RuleCommitted upserts a ``:Rule`` node with EVIDENCED_BY edges to its evidence.
FactAccessed changes nothing in the graph (access counts arrive in FactDecided), nor does
NodesAccessed: a count kept by adding one per event is not idempotent under a replayed batch, so
a node's use is kept where the log's offsets are (the view, the dream state).

A SubjectErased does not coalesce: it closes the writes planned so far and opens a new group
(`GraphBatchPlan.erasures`), and the sink runs the erasure between the two. It cannot move to the
front of the batch: an earlier edge that touches a stored node of the user (not in this batch)
would then be MERGEd after the DETACH DELETE and bring that node back as a placeholder, so the
groups are applied in batch order, each in the fixed order above.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final, cast

from engram.processors.graph.fold import derived_edge_id, fact_edges
from engram.processors.rebac import node_instance
from engram.schemas.changes import ChangeHandler, dispatch
from engram.schemas.events import stable_id
from engram.schemas.records import (
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    FactAccessed,
    FactDecided,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodesAccessed,
    NodeUpserted,
    RuleCommitted,
    SubjectErased,
)
from engram.sinks.graph.identifiers import check_rel_type, label_for_kind

Props = dict[str, object]

FACT_STATUS: Final[dict[str, str]] = {"retract": "retracted", "prune": "pruned"}


@dataclass(frozen=True, slots=True)
class NodeWrite:
    label: str
    props: Props


@dataclass(frozen=True, slots=True)
class EdgeWrite:
    rel_type: str
    src: str
    dst: str
    props: Props


def _clean(props: Props) -> Props:
    """Drop None values: neither store keeps a null property, so hashes stay comparable."""
    return {k: v for k, v in props.items() if v is not None}


def _sources(refs: Iterable[EventRef]) -> list[str]:
    return [f"{r['topic']}/{r['partition']}/{r['offset']}" for r in refs]


def node_props(node: NodeUpserted, sources: Iterable[EventRef]) -> Props:
    """A node's properties; the core fields win over same-named free-form ``properties``."""
    core: Props = {
        "id": node["node_id"],
        "kind": node["kind"],
        "layer": node["layer"],
        "user_id": node["user_id"],
        "instance": node_instance(node["layer"], node["user_id"], node.get("instance")),
        "agent_id": node["agent_id"],
        "flow_id": node["flow_id"],
        "session_id": node["session_id"],
        "text": node["text"],
        "tokens": node["tokens"],
        "event_time_ms": node["event_time_ms"],
        "dormant": False,
        "sources": _sources(sources),
    }
    return _clean({**node["properties"], **core})


def fact_row(fact: FactDecided) -> Props:
    """One ``merge_facts`` row: the fact's properties, its user node and the ABOUT edge id."""
    user_node_id = stable_id("user", fact["user_id"])
    props = _clean(
        {
            **{k: v for k, v in fact.items() if k != "fact_id"},
            "id": fact["fact_id"],
            "kind": "fact",
            "layer": "USER",
            "status": FACT_STATUS.get(fact["decision"], "active"),
        }
    )
    return {
        "id": fact["fact_id"],
        "props": props,
        "user_node_id": user_node_id,
        "user_props": {"id": user_node_id, "user_id": fact["user_id"], "kind": "user", "layer": "USER"},
        "about_id": stable_id("edge", "ABOUT", fact["fact_id"], user_node_id),
    }


@dataclass(slots=True)
class GraphWrites:
    """Coalesced writes of one stretch of a batch (no SubjectErased inside it)."""

    node_removes: set[str] = field(default_factory=set)
    nodes: dict[str, NodeWrite] = field(default_factory=dict)
    facts: dict[str, Props] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)
    edge_removes: dict[str, EdgeWrite] = field(default_factory=dict)
    edges: dict[str, EdgeWrite] = field(default_factory=dict)

    def upsert_node(self, node_id: str, write: NodeWrite) -> None:
        self.flags.pop(node_id, None)
        self.nodes[node_id] = write

    def remove_node(self, node_id: str) -> None:
        self.node_removes.add(node_id)
        self.nodes.pop(node_id, None)
        self.facts.pop(node_id, None)
        self.flags.pop(node_id, None)
        for edge_id in [e for e, w in self.edges.items() if node_id in (w.src, w.dst)]:
            del self.edges[edge_id]

    def flag(self, node_id: str, dormant: bool) -> None:
        if node_id in self.nodes:
            write = self.nodes[node_id]
            self.nodes[node_id] = NodeWrite(write.label, {**write.props, "dormant": dormant})
        elif node_id in self.facts:
            row = self.facts[node_id]
            self.facts[node_id] = {**row, "props": {**cast(Props, row["props"]), "dormant": dormant}}
        elif node_id not in self.node_removes:
            self.flags[node_id] = dormant

    def upsert_edge(self, edge_id: str, write: EdgeWrite) -> None:
        self.edge_removes.pop(edge_id, None)
        self.edges[edge_id] = write

    def remove_edge(self, edge_id: str, write: EdgeWrite) -> None:
        self.edges.pop(edge_id, None)
        self.edge_removes[edge_id] = write

    def writes_nothing(self) -> bool:
        return not (self.node_removes or self.nodes or self.facts or self.flags or self.edge_removes or self.edges)

    @property
    def empty(self) -> bool:
        return self.writes_nothing()


@dataclass(frozen=True, slots=True)
class GraphErasure:
    """A SubjectErased inside a batch: delete every node of ``user_id`` (and its relationships),
    then apply ``then``, the writes planned after it (up to the next erasure)."""

    user_id: str
    then: GraphWrites


@dataclass(slots=True)
class GraphBatchPlan(GraphWrites):
    """One batch: its own writes are those planned before the first SubjectErased (all of them
    when there is none); ``erasures`` follow in batch order. ``skipped`` counts the events of the
    whole batch that change nothing in the graph."""

    erasures: list[GraphErasure] = field(default_factory=list)
    skipped: int = 0

    @property
    def current(self) -> GraphWrites:
        """The group that the next event folds into: the one after the last erasure."""
        return self.erasures[-1].then if self.erasures else self

    def erase(self, user_id: str) -> None:
        """Close the writes planned so far; the next events fold into a new group."""
        self.erasures.append(GraphErasure(user_id, GraphWrites()))

    @property
    def empty(self) -> bool:
        return not self.erasures and self.writes_nothing()


def _edge(edge: EdgeUpserted) -> EdgeWrite:
    props = _clean({**edge["properties"], "id": edge["edge_id"], "weight": edge["weight"], "layer": edge["layer"]})
    return EdgeWrite(check_rel_type(edge["edge_type"]), edge["src"], edge["dst"], props)


class _GraphFold(ChangeHandler):
    """Folds one batch into ``plan``, each event into the group after the last erasure;
    FactAccessed, NodesAccessed and change kinds this version does not know count as ``skipped``
    (they change nothing in the graph)."""

    __slots__ = ("plan",)

    def __init__(self, plan: GraphBatchPlan) -> None:
        self.plan = plan

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        write = NodeWrite(label_for_kind(change["kind"]), node_props(change, event["sources"]))
        self.plan.current.upsert_node(change["node_id"], write)

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.plan.current.remove_node(change["node_id"])

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        self.plan.current.flag(change["node_id"], dormant=True)

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        self.plan.current.flag(change["node_id"], dormant=False)

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        self.plan.current.upsert_edge(change["edge_id"], _edge(change))

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        rel_type = check_rel_type(change["edge_type"])
        self.plan.current.remove_edge(change["edge_id"], EdgeWrite(rel_type, change["src"], change["dst"], {}))

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        writes = self.plan.current
        writes.facts[change["fact_id"]] = fact_row(change)
        for edge_type, src, dst in fact_edges(change):
            edge_id = derived_edge_id(edge_type, src, dst)
            writes.upsert_edge(edge_id, EdgeWrite(edge_type.name, src, dst, {"id": edge_id, "layer": "USER"}))

    def rule_committed(self, event: MemoryEvent, change: RuleCommitted) -> None:
        writes, rule_id = self.plan.current, change["rule_id"]
        # A rule is dreamed from one user's memory (the event's key): it is that user's, not SYSTEM's.
        props: Props = {"id": rule_id, "kind": "rule", "layer": "USER", "user_id": event["key"], "text": change["text"]}
        props |= {"reason": change["reason"], "dormant": False, "sources": _sources(event["sources"])}
        writes.upsert_node(rule_id, NodeWrite("Rule", props))
        for evidence in change["evidence_node_ids"]:
            edge_id = stable_id("edge", "EVIDENCED_BY", rule_id, evidence)
            write = EdgeWrite("EVIDENCED_BY", rule_id, evidence, {"id": edge_id, "layer": "USER"})
            writes.upsert_edge(edge_id, write)

    def subject_erased(self, event: MemoryEvent, change: SubjectErased) -> None:
        self.plan.erase(change["user_id"])

    def fact_accessed(self, event: MemoryEvent, change: FactAccessed) -> None:
        self.plan.skipped += 1

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        self.plan.skipped += 1

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        self.plan.skipped += 1


def plan_batch(events: Iterable[MemoryEvent]) -> GraphBatchPlan:
    """Fold the events, in order, into one `GraphBatchPlan`."""
    plan = GraphBatchPlan()
    fold = _GraphFold(plan)
    for event in events:
        dispatch(event, fold)
    return plan
