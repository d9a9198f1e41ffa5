"""The typed dispatch over the MemoryEvent change union, and the folds built on it.

Every change kind reaches its own method with its record (not a copy); an unknown kind raises
``UnknownChangeError`` unless the handler overrides ``unknown``; ``change_as`` is None for another
kind. The folds converted to it keep what they did with a kind they do not know.
"""

from __future__ import annotations

import re

import pytest

from engram.processors.code.graph import CodeGraph
from engram.processors.retrieval.view import MemoryView
from engram.processors.trace.navigate import TraceIndex
from engram.schemas.changes import ChangeHandler, UnknownChangeError, change_as, dispatch, kind_of
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    fact_accessed,
    memory_event,
    node_dormant,
    node_reawakened,
    node_removed,
    node_upserted,
    nodes_accessed,
    rule_committed,
    rule_rejected,
)
from engram.schemas.records import (
    CHANGE_KINDS,
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_REMOVED,
    NODE_UPSERTED,
    ChangeRecord,
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
    RuleRejected,
    SubjectErased,
)
from engram.sinks.graph.plan import plan_batch as graph_plan
from engram.sinks.qdrant.plan import plan_batch as vector_plan
from engram.streams.metrics import EngramMetrics

SOURCES: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 7}]
FACT: FactDecided = {
    "fact_id": "f1",
    "user_id": "ada",
    "scope": "user",
    "scope_id": "ada",
    "subject": "ada",
    "relation": "lives_in",
    "value": "paris",
    "category": "location",
    "confidence": 0.9,
    "decision": "store",
    "rule": "store-new",
    "reason": "no earlier fact",
    "horizon": "long",
    "access_count": 0,
    "valid_from_ms": 1,
    "valid_to_ms": None,
    "recorded_at_ms": 1,
    "supersedes": None,
    "source_event_ids": ["t1"],
}
SAMPLES: dict[str, ChangeRecord] = {
    NODE_UPSERTED: node_upserted("n1", "code_function", "USER", 1, text="def f(): ...", user_id="ada"),
    NODE_REMOVED: node_removed("n1", "code_function", "file deleted"),
    EDGE_UPSERTED: edge_upserted("NEXT", "n1", "n2", "USER"),
    "engram.EdgeRemoved": edge_removed("NEXT", "n1", "n2", "late arrival"),
    FACT_DECIDED: FACT,
    "engram.FactAccessed": fact_accessed("ada", ["f1"], "r1"),
    "engram.NodeDormant": node_dormant("n1", "cold"),
    "engram.NodeReawakened": node_reawakened("n1", "archive match"),
    "engram.RuleCommitted": rule_committed("r1", "prefer tea", "seen 3 times", ["n1"]),
    "engram.RuleRejected": rule_rejected("r2", "hikes often", "leave-one-out", "one session only", ["n1"]),
    "engram.SubjectErased": SubjectErased(user_id="ada", reason="asked to be forgotten", requested_by=None),
    "engram.NodesAccessed": nodes_accessed(["n1", "n2"], "r1"),
}
FUTURE_KIND = "engram.SomethingNewer"


def event_of(kind: str) -> MemoryEvent:
    return memory_event("ada", 1, SOURCES, kind, SAMPLES[kind])


def future_event() -> MemoryEvent:
    """A change kind a newer writer might produce (the codec would hand it over the same way)."""
    event = event_of(NODE_UPSERTED)
    event["change"] = (FUTURE_KIND, SAMPLES[NODE_UPSERTED])
    return event


def method_name(kind: str) -> str:
    """``engram.NodeUpserted`` -> ``node_upserted``: derived here, not read from the module."""
    return re.sub(r"(?<!^)([A-Z])", r"_\1", kind.removeprefix("engram.")).lower()


class Recorder(ChangeHandler):
    """Records (method, event, change) for every kind, and unknown kinds when ``lenient``."""

    def __init__(self, *, lenient: bool = False) -> None:
        self.calls: list[tuple[str, MemoryEvent, object]] = []
        self.lenient = lenient

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        self.calls.append(("node_upserted", event, change))

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.calls.append(("node_removed", event, change))

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        self.calls.append(("edge_upserted", event, change))

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        self.calls.append(("edge_removed", event, change))

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        self.calls.append(("fact_decided", event, change))

    def fact_accessed(self, event: MemoryEvent, change: FactAccessed) -> None:
        self.calls.append(("fact_accessed", event, change))

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        self.calls.append(("node_dormant", event, change))

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        self.calls.append(("node_reawakened", event, change))

    def rule_committed(self, event: MemoryEvent, change: RuleCommitted) -> None:
        self.calls.append(("rule_committed", event, change))

    def rule_rejected(self, event: MemoryEvent, change: RuleRejected) -> None:
        self.calls.append(("rule_rejected", event, change))

    def subject_erased(self, event: MemoryEvent, change: SubjectErased) -> None:
        self.calls.append(("subject_erased", event, change))

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        self.calls.append(("nodes_accessed", event, change))

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        if not self.lenient:
            super().unknown(event, kind)
        self.calls.append(("unknown", event, kind))


def test_the_samples_cover_every_change_kind() -> None:
    assert set(SAMPLES) == set(CHANGE_KINDS)


@pytest.mark.parametrize("kind", CHANGE_KINDS)
def test_each_kind_reaches_its_own_method_with_the_record_itself(kind: str) -> None:
    event = event_of(kind)
    handler = Recorder()
    dispatch(event, handler)
    assert len(handler.calls) == 1
    called, got_event, got_change = handler.calls[0]
    assert called == method_name(kind)
    assert got_event is event
    assert got_change is SAMPLES[kind]  # the decoded record, not a copy


@pytest.mark.parametrize("kind", CHANGE_KINDS)
def test_the_base_handler_ignores_every_known_kind(kind: str) -> None:
    dispatch(event_of(kind), ChangeHandler())  # no method overridden: nothing happens, nothing raises


def test_an_unknown_kind_raises_a_typed_error_naming_it() -> None:
    handler = Recorder()
    with pytest.raises(UnknownChangeError, match=FUTURE_KIND):
        dispatch(future_event(), handler)
    assert handler.calls == []
    assert issubclass(UnknownChangeError, ValueError)


def test_a_handler_may_take_unknown_kinds_itself() -> None:
    handler = Recorder(lenient=True)
    event = future_event()
    dispatch(event, handler)
    assert handler.calls == [("unknown", event, FUTURE_KIND)]


@pytest.mark.parametrize("kind", CHANGE_KINDS)
def test_kind_of_is_the_record_name(kind: str) -> None:
    assert kind_of(event_of(kind)) == kind


@pytest.mark.parametrize("kind", CHANGE_KINDS)
def test_change_as_gives_the_record_for_its_kind_and_none_for_others(kind: str) -> None:
    event = event_of(kind)
    shapes: dict[str, object | None] = {
        NODE_UPSERTED: change_as(event, NodeUpserted),
        NODE_REMOVED: change_as(event, NodeRemoved),
        EDGE_UPSERTED: change_as(event, EdgeUpserted),
        "engram.EdgeRemoved": change_as(event, EdgeRemoved),
        FACT_DECIDED: change_as(event, FactDecided),
        "engram.FactAccessed": change_as(event, FactAccessed),
        "engram.NodeDormant": change_as(event, NodeDormant),
        "engram.NodeReawakened": change_as(event, NodeReawakened),
        "engram.RuleCommitted": change_as(event, RuleCommitted),
        "engram.RuleRejected": change_as(event, RuleRejected),
        "engram.SubjectErased": change_as(event, SubjectErased),
        "engram.NodesAccessed": change_as(event, NodesAccessed),
    }
    assert shapes.pop(kind) is SAMPLES[kind]
    assert set(shapes.values()) == {None}


def test_change_as_is_none_for_an_unknown_kind() -> None:
    assert change_as(future_event(), NodeUpserted) is None


def test_change_as_types_the_record() -> None:
    node = change_as(event_of(NODE_UPSERTED), NodeUpserted)
    assert node is not None
    assert (node["node_id"], node["text"]) == ("n1", "def f(): ...")  # typed access, no cast


# --- the folds keep what they did with a kind they do not know -------------------------------


def test_the_memory_view_skips_unknown_kinds_and_does_not_count_them() -> None:
    view = MemoryView()
    applied = view.apply([future_event(), event_of(NODE_UPSERTED), event_of("engram.FactAccessed")])
    assert applied == 1
    assert len(view) == 1 and view.node("n1") is not None


def test_the_trace_index_and_the_code_graph_ignore_unknown_kinds() -> None:
    trace, code = TraceIndex(), CodeGraph()
    for fold in (trace, code):
        fold.apply_all([future_event(), event_of(NODE_UPSERTED), event_of(EDGE_UPSERTED)])
    assert list(trace.nodes) == ["n1"] and trace.next == {"n1": "n2"}
    assert [n.node_id for n in code.nodes()] == ["n1"] and code.edge_count() == 1


def test_the_sink_plans_count_unknown_kinds_as_skipped() -> None:
    events = [
        future_event(),
        event_of("engram.FactAccessed"),
        event_of("engram.NodesAccessed"),
        event_of(NODE_UPSERTED),
    ]
    graph = graph_plan(events)
    assert graph.skipped == 3 and list(graph.nodes) == ["n1"]
    vectors = vector_plan(events)
    assert vectors.skipped == 4  # the node has no embedding: it lives in the graph only
    assert vectors.empty


def test_metrics_count_an_unknown_kind_by_its_name() -> None:
    metrics = EngramMetrics()
    for event in (future_event(), event_of(NODE_UPSERTED), event_of(NODE_REMOVED), event_of(FACT_DECIDED)):
        metrics.count_memory_event(event)
    value = metrics.registry.get_sample_value
    assert value("engram_memory_events_total", {"kind": "SomethingNewer"}) == 1
    assert value("engram_code_entities_total", {"op": "upsert"}) == 1
    assert value("engram_code_entities_total", {"op": "remove"}) == 1
    assert value("engram_facts_decisions_total", {"decision": "store"}) == 1
