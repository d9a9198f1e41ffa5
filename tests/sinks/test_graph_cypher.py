"""Cypher builders and the graph plan, without a database: query strings and injection payloads."""

from __future__ import annotations

from typing import cast

import pytest

from engram.schemas.events import edge_upserted, memory_event, node_removed, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_REMOVED, NODE_UPSERTED, EventRef
from engram.sinks.graph.cypher import edges, expand, facts, nodes, subjects
from engram.sinks.graph.identifiers import (
    InvalidBoundError,
    InvalidIdentifierError,
    check_label,
    check_rel_type,
    label_for_kind,
)
from engram.sinks.graph.plan import plan_batch
from tests.sinks.events import Workload, conversation, subject_erased

INJECTIONS = [
    "Foo) DETACH DELETE n //",
    "Foo`) MATCH (m) DETACH DELETE m //",
    "Event:Admin",
    "Event {id: 1}",
    "event",
    "",
    "A" * 65,
    "Ev\u0435nt",  # Cyrillic 'е'
    "Foo\nMATCH (n) DELETE n",
]
BUILDERS_WITH_LABEL = [nodes.merge_nodes, nodes.create_or_set_nodes]
BUILDERS_WITH_TYPE = [edges.merge_edges, edges.remove_edges]
REF: list[EventRef] = [{"topic": "engram.turns", "partition": 1, "offset": 9}]


@pytest.mark.parametrize("payload", INJECTIONS)
def test_labels_and_types_outside_the_pattern_are_rejected(payload: str) -> None:
    for build in BUILDERS_WITH_LABEL:
        with pytest.raises(InvalidIdentifierError):
            build(payload)
    for build_edge in BUILDERS_WITH_TYPE:
        with pytest.raises(InvalidIdentifierError):
            build_edge(payload)
    with pytest.raises(InvalidIdentifierError):
        expand.expand_from_seeds(2, ["NEXT", payload])


def test_relationship_types_are_upper_snake_case() -> None:
    assert check_rel_type("HAS_METHOD") == "HAS_METHOD"
    with pytest.raises(InvalidIdentifierError):
        check_rel_type("next")
    assert check_label("CodeFile") == "CodeFile"


@pytest.mark.parametrize("hops", [0, 7, -1, True, 2.0, "2"])
def test_hop_bound_must_be_a_small_int(hops: object) -> None:
    with pytest.raises(InvalidBoundError):
        expand.expand_from_seeds(cast(int, hops))


def test_kinds_map_to_labels() -> None:
    assert [label_for_kind(k) for k in ("event", "concept", "fact", "code_method", "code_file")] == [
        "Event",
        "Concept",
        "Fact",
        "Method",
        "CodeFile",
    ]
    assert label_for_kind("tool_result") == "ToolResult"
    assert label_for_kind("9 lives") == "K9Lives"
    assert label_for_kind("Foo) DETACH DELETE n //") == "FooDETACHDELETEN"


def _all_queries() -> list[str]:
    return [
        nodes.merge_nodes("Event"),
        nodes.create_or_set_nodes("Event"),
        nodes.remove_nodes(),
        nodes.set_dormant(),
        nodes.node_page(),
        nodes.count_nodes(),
        nodes.duplicate_node_ids(),
        nodes.nodes_by_id(),
        edges.merge_edges("NEXT"),
        edges.remove_edges("NEXT"),
        edges.edges_from(),
        edges.count_edges(),
        edges.duplicate_edge_ids(),
        facts.merge_facts(),
        facts.create_or_set_facts(),
        facts.facts_of_user(),
        expand.expand_from_seeds(3, ["NEXT", "REF"], same_user=True),
        expand.edges_among(),
        subjects.sweep_subject_placeholders(),
        subjects.erase_subject_chunk(),
        subjects.count_subject_nodes(),
    ]


@pytest.mark.parametrize("query", _all_queries())
def test_queries_stay_in_the_subset_both_stores_run_and_take_values_as_params(query: str) -> None:
    for unsupported in ("IF NOT EXISTS", "CONSTRAINT", "EXISTS {", "COUNT {", "=~", "elementId(", "datetime(", "apoc."):
        assert unsupported not in query
    assert "'" not in query and '"' not in query  # no string literals: every value is a $param


def test_write_builders_unwind_rows_and_merge_by_id() -> None:
    assert nodes.merge_nodes("Concept") == (
        "UNWIND $rows AS row MERGE (n:Memory {id: row.id}) SET n = row.props SET n:Concept"
    )
    q = edges.merge_edges("CALLS")
    assert q.startswith("UNWIND $rows AS row MERGE (a:Memory {id: row.src}) MERGE (b:Memory {id: row.dst}) ")
    assert "MERGE (a)-[r:CALLS {id: row.id}]->(b) SET r = row.props" in q


def test_expansion_filters_layers_in_where_and_interpolates_only_the_validated_bound() -> None:
    q = expand.expand_from_seeds(2, ["NEXT", "CAUSAL"])
    assert "-[:NEXT|CAUSAL*1..2]-" in q
    assert "WHERE n.id <> s.id AND all(x IN nodes(p) WHERE x.layer IN $layers)" in q
    assert q.endswith("LIMIT $limit")
    assert "$seeds" in q
    assert "$user_id" not in q
    assert "-[*1..4]-" in expand.expand_from_seeds(4)


def test_plan_coalesces_and_drops_edges_of_nodes_removed_later_in_the_batch() -> None:
    a, b = stable_id("a"), stable_id("b")
    events = [
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(a, "event", "USER", 1, user_id="u")),
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(b, "event", "USER", 2, user_id="u")),
        memory_event("u", 2, REF, EDGE_UPSERTED, edge_upserted("NEXT", a, b, "USER")),
        memory_event("u", 3, REF, NODE_REMOVED, node_removed(b, "event", "pruned")),
    ]
    plan = plan_batch(events)
    assert set(plan.nodes) == {a}
    assert plan.node_removes == {b}
    assert plan.edges == {}
    props = plan.nodes[a].props
    assert props["sources"] == ["engram.turns/1/9"]
    assert "agent_id" not in props  # None values are not stored
    assert (plan.nodes[a].label, props["layer"], props["dormant"]) == ("Event", "USER", False)


def test_plan_rejects_an_edge_type_outside_the_pattern() -> None:
    a, b = stable_id("a"), stable_id("b")
    bad = edge_upserted("NEXT]->(x) DETACH DELETE x //", a, b, "USER")
    with pytest.raises(InvalidIdentifierError):
        plan_batch([memory_event("u", 1, REF, EDGE_UPSERTED, bad)])


def test_facts_are_soft_deleted_and_point_at_their_user() -> None:
    plan = plan_batch(conversation(Workload(users=1, turns_per_user=5, concepts_per_user=1, dim=4)))
    (row,) = plan.facts.values()
    props = row["props"]
    assert isinstance(props, dict)
    assert (props["status"], props["decision"], props["kind"]) == ("retracted", "retract", "fact")
    assert isinstance(props["valid_to_ms"], int)
    assert row["user_props"] == {"id": row["user_node_id"], "user_id": "user-0", "kind": "user", "layer": "USER"}


def test_erasure_statements_are_small_chunked_and_take_the_user_as_a_param() -> None:
    sweep, erase = subjects.sweep_subject_placeholders(), subjects.erase_subject_chunk()
    for query in (sweep, erase):
        assert "$user_id" in query and "LIMIT $limit" in query
        assert query.endswith("AS deleted")
        assert len(query.encode()) < 512  # FalkorDB's Bolt port crashes on requests over ~4 KB
    assert erase == (
        "MATCH (n:Memory) WHERE n.user_id = $user_id AND (n.kind IS NULL OR NOT n.kind STARTS WITH $kept_prefix) "
        "WITH n LIMIT $limit DETACH DELETE n RETURN count(n) AS deleted"
    )
    assert "p.kind IS NULL" in sweep and "WHERE owned = degree" in sweep  # placeholders only the user touches


def test_plan_splits_at_an_erasure_and_never_coalesces_across_it() -> None:
    a, b, c = stable_id("a"), stable_id("b"), stable_id("c")
    events = [
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(a, "event", "USER", 1, user_id="u")),
        memory_event("u", 1, REF, EDGE_UPSERTED, edge_upserted("NEXT", b, a, "USER")),
        subject_erased("u", 2, 10),
        memory_event("u", 3, REF, NODE_REMOVED, node_removed(a, "event", "pruned")),
        memory_event("u", 3, REF, NODE_UPSERTED, node_upserted(c, "event", "USER", 3, user_id="u")),
        subject_erased("v", 4, 11),
    ]
    plan = plan_batch(events)
    assert set(plan.nodes) == {a} and len(plan.edges) == 1  # written, then erased: the order is kept
    assert [e.user_id for e in plan.erasures] == ["u", "v"]
    after_u = plan.erasures[0].then
    assert (after_u.node_removes, set(after_u.nodes), after_u.edges) == ({a}, {c}, {})
    assert plan.erasures[1].then.empty
    only_an_erasure = plan_batch([subject_erased("u", 2, 10)])
    assert not only_an_erasure.empty and only_an_erasure.writes_nothing()
