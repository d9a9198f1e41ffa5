"""SubjectErased in `GraphSink` against the real FalkorDB stand-in (native client), plus a Bolt
smoke test of the same statement through `Neo4jExecutor`: every node of the user goes (memory
nodes, facts, its user node, its rules) with their relationships; everything else stays as it
was; an erasure inside a batch keeps batch order; replays and crashes mid-batch end where a clean
run does. Each test gets its own graph names."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping

import neo4j
import pytest

from engram.infra.config import StackInfo
from engram.processors.trust.erasure import KEPT_KIND_PREFIX
from engram.schemas.events import edge_upserted, memory_event, node_upserted, rule_committed, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, RULE_COMMITTED, EventRef, MemoryEvent
from engram.sinks.base import SinkConfig
from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.cypher import subjects as subject_cypher
from engram.sinks.graph.executor import GraphExecutor, Row
from engram.sinks.graph.falkor import FalkorExecutor
from engram.sinks.graph.neo4j_executor import Neo4jExecutor
from engram.sinks.graph.plan import plan_batch
from engram.sinks.graph.sink import GraphSink
from tests.sinks.events import T0_MS, Workload, as_items, conversation, fresh_content, subject_erased
from tests.sinks.falkor import dropped_graphs, falkor_executor

pytestmark = pytest.mark.integration

LOG = Workload(users=2, turns_per_user=10, concepts_per_user=2, dim=4, seed=4)
GONE, STAYS = "user-0", "user-1"
T_BATCH = T0_MS + 100_000
REF: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 50}]
Node = tuple[list[str], dict[str, object]]
Edge = tuple[str, str, str, object]
Graph = tuple[dict[str, Node], dict[str, Edge]]


def _executor(stack: StackInfo, graph: str, max_rows: int = 50) -> FalkorExecutor:
    return falkor_executor(stack, graph, max_rows)


@pytest.fixture
def graph_names(stack: StackInfo, unique_name: str) -> Iterator[list[str]]:
    """Graph names for this test; each graph is dropped afterwards."""
    yield from dropped_graphs(stack, unique_name, 6)


def _base_log() -> list[MemoryEvent]:
    """Two users' nodes, facts and edges; a rule dreamed from GONE's memory; one edge from a GONE
    turn to a STAYS concept (it goes with GONE's node)."""
    gone_turn, stays_concept = stable_id("turn", GONE, 3), stable_id("concept", STAYS, 0)
    rule = rule_committed(stable_id("rule", GONE), "prefers tea", "seen twice", [gone_turn])
    cross = edge_upserted("REF", gone_turn, stays_concept, "USER")
    return [
        *conversation(LOG),
        memory_event(GONE, T0_MS, REF, RULE_COMMITTED, rule),
        memory_event(GONE, T0_MS, REF, EDGE_UPSERTED, cross),
    ]


def _batch() -> list[MemoryEvent]:
    """GONE writes (and links a stored turn to it), is erased, and comes back: new turns, one of
    its old ids re-used, and an edge from an erased id (a placeholder, as one by one)."""
    stored, returned = stable_id("turn", GONE, 6), stable_id("turn", GONE, 5)
    before = fresh_content(GONE, "before", 3, 4, seed=31, t_ms=T_BATCH)
    link = edge_upserted("NEXT", stored, stable_id("before", GONE, 0), "USER")
    before.append(memory_event(GONE, T_BATCH, REF, EDGE_UPSERTED, link))
    after = fresh_content(GONE, "after", 2, 4, seed=32, t_ms=T_BATCH + 10)
    back = node_upserted(returned, "event", "USER", T_BATCH + 20, text=f"returned {GONE}", user_id=GONE)
    after.append(memory_event(GONE, T_BATCH + 20, REF, NODE_UPSERTED, back))
    late = edge_upserted("NEXT", stable_id("turn", GONE, 7), stable_id("after", GONE, 0), "USER")
    after.append(memory_event(GONE, T_BATCH + 21, REF, EDGE_UPSERTED, late))
    return [*before, subject_erased(GONE, T_BATCH + 5, 99), *after]


def _feed(sink: GraphSink, events: list[MemoryEvent], first_offset: int = 0) -> None:
    for item in as_items(events, first_offset=first_offset):
        sink.add(item)
    sink.flush()


def _sink(executor: GraphExecutor, max_batch: int = 1000) -> GraphSink:
    sink = GraphSink(executor, SinkConfig(max_batch=max_batch))
    sink.setup()
    return sink


def _node(row: Row) -> Node:
    labels, props = row["labels"], row["props"]
    assert isinstance(labels, list) and isinstance(props, dict)
    return sorted(str(label) for label in labels), props


def _graph(executor: GraphExecutor) -> Graph:
    """Every node ``{id: (labels, props)}`` and relationship ``{id: (type, src, dst, props)}``."""
    rows = executor.run(node_cypher.node_page(), {"after": "", "limit": 100_000})
    nodes = {str(r["id"]): _node(r) for r in rows}
    edges = executor.run(edge_cypher.edges_from(), {"ids": list(nodes)})
    return nodes, {str(r["id"]): (str(r["type"]), str(r["src"]), str(r["dst"]), r["props"]) for r in edges}


def _without(graph: Graph, user: str) -> Graph:
    """``graph`` less ``user``'s nodes, the placeholders (no ``kind``) that only they touch, and
    every relationship that touches one of those: what an erasure of ``user`` should leave."""
    nodes, edges = graph
    owned = {node_id for node_id, node in nodes.items() if node[1].get("user_id") == user}
    neighbours: dict[str, set[str]] = {}
    for _, src, dst, _ in edges.values():
        neighbours.setdefault(src, set()).add(dst)
        neighbours.setdefault(dst, set()).add(src)
    swept = {n for n, around in neighbours.items() if "kind" not in nodes[n][1] and around <= owned}
    kept = {node_id: node for node_id, node in nodes.items() if node_id not in owned | swept}
    return kept, {e: edge for e, edge in edges.items() if edge[1] in kept and edge[2] in kept}


def _of(graph: Graph, user: str) -> dict[str, Node]:
    return {node_id: node for node_id, node in graph[0].items() if node[1].get("user_id") == user}


def _assert_gone(executor: GraphExecutor) -> None:
    nodes, _ = _graph(executor)
    assert _of((nodes, {}), GONE) == {}
    assert [props for _, props in nodes.values() if GONE in json.dumps(props)] == []  # texts, sessions, facts
    erased = {"user_id": GONE, "kept_prefix": KEPT_KIND_PREFIX}
    assert executor.run(subject_cypher.count_subject_nodes(), erased) == [{"count": 0}]


def test_erasure_deletes_every_node_of_the_user_and_nothing_else(stack: StackInfo, graph_names: list[str]) -> None:
    sink = _sink(_executor(stack, graph_names[0], max_rows=7))
    try:
        _feed(sink, _base_log())
        before = _graph(sink.executor)
        labels = {label for labels, _ in _of(before, GONE).values() for label in labels}
        assert labels >= {"Concept", "Event", "Fact", "Rule", "User"}
        assert any(props.get("dormant") is True for _, props in _of(before, GONE).values())

        _feed(sink, [subject_erased(GONE, T_BATCH, 99)], first_offset=1000)
        _assert_gone(sink.executor)
        after = _graph(sink.executor)
        assert after == _without(before, GONE)  # the rest, STAYS included, exactly as it was
        assert _of(after, STAYS) == _of(before, STAYS)
        assert sink.stats.erasures == 1
        assert sink.stats.erased_nodes == len(_of(before, GONE)) > 7  # several chunks of max_rows
        swept = len(before[0]) - len(after[0]) - sink.stats.erased_nodes
        assert sink.stats.swept_placeholders == swept > 0  # the SUPPORTS sources of GONE's fact
    finally:
        sink.close()


def test_an_erasure_inside_a_batch_keeps_batch_order(stack: StackInfo, graph_names: list[str]) -> None:
    """One batch equals the events applied one by one; GONE keeps exactly what came after."""
    whole = _sink(_executor(stack, graph_names[0]))
    one_by_one = _sink(_executor(stack, graph_names[1]), max_batch=1)
    try:
        for sink in (whole, one_by_one):
            _feed(sink, _base_log())
            _feed(sink, _batch(), first_offset=1000)
        assert whole.stats.batches == 2
        assert whole.content_hash() == one_by_one.content_hash()
        nodes, edges = _graph(whole.executor)
        after = [stable_id("after", GONE, 0), stable_id("after", GONE, 1), stable_id("turn", GONE, 5)]
        assert sorted(_of((nodes, edges), GONE)) == sorted(after)
        assert stable_id("turn", GONE, 6) not in nodes  # the link before the erasure went with it
        assert nodes[stable_id("turn", GONE, 7)] == (["Memory"], {"id": stable_id("turn", GONE, 7)})  # placeholder
    finally:
        whole.close()
        one_by_one.close()


def test_replaying_an_erasure_changes_nothing(stack: StackInfo, graph_names: list[str]) -> None:
    sink = _sink(_executor(stack, graph_names[0], max_rows=5), max_batch=13)
    try:
        _feed(sink, _base_log())
        _feed(sink, _batch(), first_offset=1000)
        settled = sink.content_hash()
        _feed(sink, _batch(), first_offset=1000)  # the batch again (redelivered)
        assert sink.content_hash() == settled
        _feed(sink, _base_log())  # the whole log again: GONE's old nodes return, then the erasure takes them
        _feed(sink, _batch(), first_offset=1000)
        assert sink.content_hash() == settled
    finally:
        sink.close()


class _KilledMidBatch(Exception):
    """The worker dies here."""


class _DyingExecutor:
    """Passes ``allowed`` queries to FalkorDB, then dies; ``queries`` records those it passed."""

    def __init__(self, inner: GraphExecutor, allowed: int | None = None) -> None:
        self.inner = inner
        self.allowed = allowed
        self.queries: list[str] = []

    @property
    def max_rows(self) -> int:
        return self.inner.max_rows

    @property
    def labels_at_create(self) -> bool:
        return self.inner.labels_at_create

    def setup(self) -> None:
        self.inner.setup()

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[Row]:
        if self.allowed is not None:
            if self.allowed == 0:
                raise _KilledMidBatch
            self.allowed -= 1
        self.queries.append(query)
        return self.inner.run(query, params)

    def close(self) -> None:
        self.inner.close()


def test_a_crash_anywhere_around_an_erasure_then_replay_ends_like_a_clean_run(
    stack: StackInfo, graph_names: list[str]
) -> None:
    clean = _sink(_executor(stack, graph_names[0], max_rows=5))
    try:
        _feed(clean, _base_log())
        recorder = _DyingExecutor(clean.executor)
        _feed(GraphSink(recorder), _batch(), first_offset=1000)
        expected = clean.content_hash()
    finally:
        clean.close()
    queries = recorder.queries
    sweep, erase = subject_cypher.sweep_subject_placeholders(), subject_cypher.erase_subject_chunk()
    first, last = queries.index(sweep), len(queries) - queries[::-1].index(erase) - 1
    assert queries[first : last + 1].count(erase) >= 3  # several chunks: a cut can fall inside the erasure
    cuts = (1, first, queries.index(erase), queries.index(erase) + 1, last + 1)
    for name, cut in zip(graph_names[1:], cuts, strict=True):
        base = _sink(_executor(stack, name, max_rows=5))
        _feed(base, _base_log())
        dying = GraphSink(_DyingExecutor(base.executor, allowed=cut))
        for item in as_items(_batch(), first_offset=1000):
            dying.add(item)
        with pytest.raises(_KilledMidBatch):
            dying.flush()
        base.close()
        restarted = _sink(_executor(stack, name, max_rows=5))  # a new worker replays from the last commit
        try:
            _feed(restarted, _batch(), first_offset=1000)
            assert restarted.content_hash() == expected, f"cut after {cut} of {len(queries)} queries"
        finally:
            restarted.close()


def test_erasure_over_bolt_with_the_neo4j_executor(bolt_driver: neo4j.Driver, unique_name: str) -> None:
    """Tiny writes only (FalkorDB's Bolt crashes on requests over ~4 KB); one node per chunk."""
    gone, stays = f"{unique_name}-gone", f"{unique_name}-stays"
    a, b, c, d = (stable_id(unique_name, n) for n in "abcd")
    events = [
        memory_event(gone, 1, REF, NODE_UPSERTED, node_upserted(a, "concept", "USER", 1, text="x", user_id=gone)),
        memory_event(gone, 1, REF, NODE_UPSERTED, node_upserted(b, "concept", "USER", 1, text="y", user_id=gone)),
        memory_event(stays, 1, REF, NODE_UPSERTED, node_upserted(c, "concept", "USER", 1, text="z", user_id=stays)),
        memory_event(gone, 2, REF, EDGE_UPSERTED, edge_upserted("REF", a, c, "USER")),
        memory_event(gone, 2, REF, EDGE_UPSERTED, edge_upserted("REF", b, d, "USER")),  # d: a placeholder
        subject_erased(gone, 3, 4),
    ]
    for query in (subject_cypher.sweep_subject_placeholders(), subject_cypher.erase_subject_chunk()):
        assert len(query.encode()) < 512
    executor = Neo4jExecutor(bolt_driver, max_rows=1, create_index=False)
    sink = GraphSink(executor)
    sink.setup()
    try:
        for _ in range(2):  # twice: idempotent
            sink.apply(plan_batch(events))
        rows = executor.run(node_cypher.nodes_by_id(), {"ids": [a, b, c, d]})
        assert [(r["id"], r["user_id"]) for r in rows] == [(c, stays)]
        assert executor.run(edge_cypher.edges_from(), {"ids": [a, b, c, d]}) == []
        assert (sink.stats.erased_nodes, sink.stats.swept_placeholders) == (4, 2)  # per run: a, b; d
    finally:
        executor.run(node_cypher.remove_nodes(), {"ids": [a, b, c, d]})
        sink.close()
