"""`GraphSink` against the real FalkorDB stand-in (native client), plus one Bolt smoke test of
`Neo4jExecutor`. Each test gets its own graph name."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import cast

import neo4j
import pytest
from falkordb import FalkorDB

from engram.benchmarks.ingest_bounds import graph_upsert_us
from engram.infra.config import StackInfo
from engram.processors.graph.fold import derived_edge_id, fact_edges
from engram.schemas.events import edge_upserted, memory_event, node_dormant, node_upserted, stable_id
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REMOVED,
    NODE_UPSERTED,
    EdgeRemoved,
    EdgeUpserted,
    EventRef,
    FactDecided,
    Layer,
    MemoryEvent,
    NodeRemoved,
    NodeUpserted,
)
from engram.sinks.base import SinkConfig
from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import expand
from engram.sinks.graph.cypher import facts as fact_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.executor import GraphExecutor, Row
from engram.sinks.graph.falkor import FalkorExecutor
from engram.sinks.graph.neo4j_executor import Neo4jExecutor
from engram.sinks.graph.plan import plan_batch
from engram.sinks.graph.sink import GraphSink
from tests.sinks.events import Workload, as_items, conversation
from tests.sinks.falkor import dropped_graphs, falkor_executor

pytestmark = pytest.mark.integration

LOG = Workload(users=3, turns_per_user=40, concepts_per_user=3, dim=4, seed=2)


def _executor(stack: StackInfo, graph: str, max_rows: int = 50) -> FalkorExecutor:
    return falkor_executor(stack, graph, max_rows)


@pytest.fixture
def graph_names(stack: StackInfo, unique_name: str) -> Iterator[list[str]]:
    """Graph names for this test; each graph is dropped afterwards."""
    yield from dropped_graphs(stack, unique_name, 3)


def _apply(executor: GraphExecutor, events: list[MemoryEvent], max_batch: int = 64) -> GraphSink:
    sink = GraphSink(executor, SinkConfig(max_batch=max_batch))
    sink.setup()
    for item in as_items(events):
        sink.add(item)
    sink.flush()
    return sink


def _reference(events: list[MemoryEvent]) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """Node and edge ids after applying the log one event at a time (an independent model)."""
    nodes: set[str] = set()
    edges: dict[str, tuple[str, str]] = {}
    for event in events:
        kind, change = event["change"]
        if kind == NODE_UPSERTED:
            nodes.add(cast(NodeUpserted, change)["node_id"])
        elif kind == NODE_REMOVED:
            gone = cast(NodeRemoved, change)["node_id"]
            nodes.discard(gone)
            edges = {e: ends for e, ends in edges.items() if gone not in ends}
        elif kind == EDGE_UPSERTED:
            edge = cast(EdgeUpserted, change)
            nodes.update((edge["src"], edge["dst"]))
            edges[edge["edge_id"]] = (edge["src"], edge["dst"])
        elif kind == EDGE_REMOVED:
            edges.pop(cast(EdgeRemoved, change)["edge_id"], None)
        elif kind == FACT_DECIDED:
            fact = cast(FactDecided, change)
            user_node = stable_id("user", fact["user_id"])
            nodes.update((fact["fact_id"], user_node))
            edges[stable_id("edge", "ABOUT", fact["fact_id"], user_node)] = (fact["fact_id"], user_node)
            for edge_type, src, dst in fact_edges(fact):  # SUPPORTS from source turns, SUPERSEDES, ...
                nodes.update((src, dst))
                edges[derived_edge_id(edge_type, src, dst)] = (src, dst)
    return nodes, edges


def _ids(executor: GraphExecutor) -> tuple[list[str], list[str]]:
    nodes = [str(r["id"]) for r in executor.run(node_cypher.node_page(), {"after": "", "limit": 100_000})]
    edges = [str(r["id"]) for r in executor.run(edge_cypher.edges_from(), {"ids": nodes})]
    return nodes, edges


def _assert_matches_log(executor: GraphExecutor, events: list[MemoryEvent]) -> None:
    nodes, edges = _ids(executor)
    expected_nodes, expected_edges = _reference(events)
    assert len(nodes) == len(set(nodes)) and len(edges) == len(set(edges))  # nothing duplicated
    assert set(nodes) == expected_nodes  # nothing lost, nothing extra
    assert set(edges) == set(expected_edges)
    assert executor.run(node_cypher.duplicate_node_ids()) == []
    assert executor.run(edge_cypher.duplicate_edge_ids()) == []


def _assert_same_graph(checked: GraphSink, other: GraphSink, events: list[MemoryEvent]) -> None:
    """``checked`` holds exactly what ``events`` say, with the same content as ``other``; closes both."""
    try:
        _assert_matches_log(checked.executor, events)
        assert checked.content_hash() == other.content_hash()
    finally:
        checked.close()
        other.close()


def test_replaying_the_log_into_empty_graphs_gives_identical_hashes(stack: StackInfo, graph_names: list[str]) -> None:
    events = conversation(LOG)
    first = _apply(_executor(stack, graph_names[0]), events)
    second = _apply(_executor(stack, graph_names[1]), events, max_batch=17)
    try:
        _assert_matches_log(first.executor, events)
        assert first.content_hash() == second.content_hash()
        before = first.content_hash()
        for item in as_items(events):  # the log again into the same graph: no change
            first.add(item)
        first.flush()
        assert first.content_hash() == before
    finally:
        first.close()
        second.close()


class _KilledMidBatch(Exception):
    """The worker dies here."""


class _DyingExecutor:
    """Passes ``allowed`` queries to FalkorDB, then dies: a worker killed in the middle of a batch."""

    def __init__(self, inner: FalkorExecutor, allowed: int) -> None:
        self.inner = inner
        self.allowed = allowed

    @property
    def max_rows(self) -> int:
        return self.inner.max_rows

    @property
    def labels_at_create(self) -> bool:
        return self.inner.labels_at_create

    def setup(self) -> None:
        self.inner.setup()

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[Row]:
        if self.allowed == 0:
            raise _KilledMidBatch
        self.allowed -= 1
        return self.inner.run(query, params)

    def close(self) -> None:
        self.inner.close()


def test_worker_killed_mid_batch_then_replayed_leaves_no_lost_or_duplicate_entity(
    stack: StackInfo, graph_names: list[str]
) -> None:
    events = conversation(LOG)
    dying = GraphSink(_DyingExecutor(_executor(stack, graph_names[0]), allowed=9), SinkConfig(max_batch=200))
    dying.setup()
    for item in as_items(events):
        dying.add(item)
    with pytest.raises(_KilledMidBatch):
        dying.flush()  # nodes of the first batch written, its edges not
    dying.close()

    restarted = _apply(_executor(stack, graph_names[0]), events, max_batch=200)  # replay from the last commit
    clean = _apply(_executor(stack, graph_names[1]), events)
    _assert_same_graph(restarted, clean, events)


def test_edges_arriving_before_their_nodes_are_kept(stack: StackInfo, graph_names: list[str]) -> None:
    # Removals are left out: across partitions they only commute with what they remove.
    events = [e for e in conversation(LOG) if e["change"][0] not in (EDGE_REMOVED, NODE_REMOVED)]
    edges_first = [e for e in events if e["change"][0] == EDGE_UPSERTED]
    edges_first += [e for e in events if e["change"][0] != EDGE_UPSERTED]
    in_order = _apply(_executor(stack, graph_names[0]), events)
    reordered = _apply(_executor(stack, graph_names[1]), edges_first)
    _assert_same_graph(reordered, in_order, events)


def test_new_nodes_are_created_with_their_labels_and_a_placeholder_gets_its_label_once(
    stack: StackInfo, graph_names: list[str]
) -> None:
    # FalkorDB adds a label to an existing node in time linear in its nodes: the sink creates a new
    # node with its labels, and adds one only to a node an edge made before the node's own upsert.
    executor = _executor(stack, graph_names[0])
    assert executor.labels_at_create
    host, port = stack.require_falkordb()
    graph = FalkorDB(host=host, port=port).select_graph(graph_names[0])
    upsert = node_cypher.create_or_set_nodes("Event")
    graph.query(upsert, {"rows": [{"id": "first", "props": {"id": "first"}}]})  # the label enters the schema
    graph.query(edge_cypher.merge_edges("NEXT"), {"rows": [{"src": "early", "dst": "x", "id": "e1", "props": {}}]})
    rows = [{"id": node_id, "props": {"id": node_id, "text": f"{node_id} text"}} for node_id in ("early", "new")]
    first = graph.query(upsert, {"rows": rows})
    assert (first.nodes_created, first.labels_added) == (1, 1)  # "new" came with its labels; "early" got one
    again = graph.query(upsert, {"rows": rows})
    assert (again.nodes_created, again.labels_added) == (0, 0)
    found = executor.run("MATCH (n:Memory:Event) RETURN n.id AS id, n.text AS text ORDER BY id")
    assert found == [
        {"id": "early", "text": "early text"},
        {"id": "first", "text": None},
        {"id": "new", "text": "new text"},
    ]
    assert executor.run(node_cypher.duplicate_node_ids()) == []
    executor.close()


def test_the_ingest_bench_bound_times_both_node_upserts_on_a_growing_graph(
    stack: StackInfo, graph_names: list[str]
) -> None:
    executor = _executor(stack, graph_names[0], max_rows=500)
    found = graph_upsert_us(executor, sizes=(1000, 6000), rows=100)
    assert found["nodes"] == [1000, 6000]
    # Adding the label to a node made without it already costs several times a create at 6,000 nodes.
    assert 0 < found["created_with_labels"][1] < found["merge_then_label"][1]
    assert executor.run(node_cypher.count_nodes()) == [{"count": 6000 + 2 * 100}]
    executor.close()


REF: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 1}]
CHAIN_LAYERS: dict[str, Layer] = {"a": "USER", "b": "TEAM", "c": "USER", "d": "USER", "e": "USER"}


def _chain(prefix: str) -> tuple[dict[str, str], list[MemoryEvent]]:
    """a(USER) -NEXT-> b(TEAM) -NEXT-> c(USER) -REF-> d(USER, dormant); a -CAUSAL-> e(USER)."""
    ids = {k: stable_id(prefix, k) for k in CHAIN_LAYERS}
    out = [
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(ids[k], "event", layer, 1, text=k, user_id="u"))
        for k, layer in CHAIN_LAYERS.items()
    ]
    for edge_type, src, dst in (("NEXT", "a", "b"), ("NEXT", "b", "c"), ("REF", "c", "d"), ("CAUSAL", "a", "e")):
        out.append(memory_event("u", 1, REF, EDGE_UPSERTED, edge_upserted(edge_type, ids[src], ids[dst], "USER")))
    out.append(memory_event("u", 2, REF, NODE_DORMANT, node_dormant(ids["d"], "idle")))
    return ids, out


def _expanded(executor: GraphExecutor, query: str, seeds: list[str], layers: list[str]) -> dict[str, object]:
    rows = executor.run(query, {"seeds": seeds, "layers": layers, "limit": 10, "user_id": "u"})
    return {str(r["id"]): r["hops"] for r in rows}


def test_multi_hop_expansion_stays_in_authorized_layers(stack: StackInfo, graph_names: list[str]) -> None:
    ids, events = _chain(graph_names[0])
    sink = _apply(_executor(stack, graph_names[0]), events)
    try:
        ex = sink.executor
        both = _expanded(ex, expand.expand_from_seeds(3), [ids["a"]], ["USER", "TEAM"])
        assert both == {ids["b"]: 1, ids["e"]: 1, ids["c"]: 2}  # d is dormant
        with_dormant = _expanded(ex, expand.expand_from_seeds(3, include_dormant=True), [ids["a"]], ["USER", "TEAM"])
        assert with_dormant[ids["d"]] == 3
        user_only = _expanded(ex, expand.expand_from_seeds(3, same_user=True), [ids["a"]], ["USER"])
        assert user_only == {ids["e"]: 1}  # c is only reachable through the TEAM node b
        next_only = _expanded(ex, expand.expand_from_seeds(2, ["NEXT"]), [ids["a"]], ["USER", "TEAM"])
        assert next_only == {ids["b"]: 1, ids["c"]: 2}
        among = ex.run(expand.edges_among(), {"ids": [ids["a"], ids["b"], ids["c"]]})
        assert [(r["src"], r["type"], r["dst"]) for r in among] == sorted(
            [(ids["a"], "NEXT", ids["b"]), (ids["b"], "NEXT", ids["c"])]
        )
    finally:
        sink.close()


def test_retracted_facts_stay_with_their_status(stack: StackInfo, graph_names: list[str]) -> None:
    sink = _apply(_executor(stack, graph_names[0]), conversation(LOG))
    try:
        retracted = sink.executor.run(fact_cypher.facts_of_user(), {"user_id": "user-1", "status": "retracted"})
        assert [r["value"] for r in retracted] == ["thing 0"]
        assert isinstance(retracted[0]["valid_to_ms"], int)
        assert sink.executor.run(fact_cypher.facts_of_user(), {"user_id": "user-1", "status": "active"}) == []
    finally:
        sink.close()


def test_neo4j_executor_smoke_over_bolt(bolt_driver: neo4j.Driver, unique_name: str) -> None:
    """Tiny writes only: FalkorDB's Bolt port crashes on requests over ~4 KB and has no IF NOT EXISTS."""
    a, b = stable_id(unique_name, "a"), stable_id(unique_name, "b")
    events = [
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(a, "concept", "USER", 1, text="x", user_id="u")),
        memory_event("u", 1, REF, NODE_UPSERTED, node_upserted(b, "concept", "USER", 2, text="y", user_id="u")),
        memory_event("u", 2, REF, EDGE_UPSERTED, edge_upserted("REF", a, b, "USER")),
    ]
    executor = Neo4jExecutor(bolt_driver, max_rows=1, create_index=False)
    sink = GraphSink(executor)
    sink.setup()
    try:
        for _ in range(2):  # twice: idempotent
            sink.apply(plan_batch(events))
        rows = executor.run(node_cypher.nodes_by_id(), {"ids": [a, b]})
        assert [(r["id"], r["labels"], r["event_time_ms"]) for r in rows] == sorted(
            [(a, ["Memory", "Concept"], 1), (b, ["Memory", "Concept"], 2)]
        )
        among = executor.run(expand.edges_among(), {"ids": [a, b]})
        assert [(r["src"], r["type"], r["dst"]) for r in among] == [(a, "REF", b)]
    finally:
        executor.run(node_cypher.remove_nodes(), {"ids": [a, b]})
        sink.close()
