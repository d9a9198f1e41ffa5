"""Every Cypher statement the graph sink and System 2 send, through the neo4j driver on FalkorDB's
Bolt port: the Neo4j adapter's own path (issue 18), one small statement at a time (one row per
statement, ``max_rows=1``: the Bolt port crashes on requests over ~4 KB, ARCHITECTURE.md).

A memory that exercises every write (nodes of two labels, edges of two types, facts stored and
retracted, an edge removed, a node made dormant and woken, a node removed, a user erased) goes
through `GraphSink` over `Neo4jExecutor`, then every read (paging, counts, duplicate checks,
facts, both expansions, the edges among a set); each statement is recorded. The test checks that
every builder in `sinks/graph/cypher/` was sent, and that each answered.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import neo4j

from engram.processors.rebac import Viewer
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    memory_event,
    node_dormant,
    node_reawakened,
    node_removed,
    node_upserted,
    stable_id,
)
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    NODE_UPSERTED,
    SUBJECT_ERASED,
    EventRef,
    FactDecided,
    MemoryEvent,
    SubjectErased,
)
from engram.sinks.graph.cypher import edges, expand, facts, nodes, subjects
from engram.sinks.graph.expansion import CypherExpander
from engram.sinks.graph.neo4j_executor import Neo4jExecutor
from engram.sinks.graph.plan import plan_batch
from engram.sinks.graph.sink import GraphSink

REF: list[EventRef] = [{"topic": "engram.turns", "partition": 0, "offset": 1}]


class Recording(Neo4jExecutor):
    """The Neo4j adapter, recording every statement it is asked to run."""

    sent: list[str]

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[dict[str, Any]]:
        self.sent.append(query)
        return super().run(query, params)


def fact(user: str, n: int, decision: str) -> FactDecided:
    return {
        "fact_id": stable_id("fact", user, n), "user_id": user, "scope": "user", "scope_id": user, "subject": user,
        "relation": "likes", "value": f"thing {n}", "category": "preference", "confidence": 0.9,
        "decision": decision, "rule": "store-new", "reason": "test", "horizon": "short_term", "access_count": 0,
        "valid_from_ms": 1, "valid_to_ms": 2 if decision == "retract" else None, "recorded_at_ms": 1,
        "supersedes": None, "source_event_ids": [],
    }  # fmt: skip


def memory(user: str, gone: str, ids: Callable[..., str]) -> list[list[MemoryEvent]]:
    """Three batches: writes; a dormancy (of a node already stored: a flag of its own); a wake-up,
    removals and an erasure."""
    a, b, c, d = ids("a"), ids("b"), ids("c"), ids("d")
    erased: SubjectErased = {"user_id": gone, "reason": "test", "requested_by": None}
    placed = ((a, "event", user), (b, "concept", user), (c, "event", user), (d, "event", gone))
    upserts = [node_upserted(n, kind, "USER", 1, text=n, user_id=owner) for n, kind, owner in placed]
    return [
        [
            *(memory_event(user, 1, REF, NODE_UPSERTED, node) for node in upserts),
            memory_event(user, 1, REF, EDGE_UPSERTED, edge_upserted("NEXT", a, c, "USER")),
            memory_event(user, 1, REF, EDGE_UPSERTED, edge_upserted("REF", a, b, "USER")),
            memory_event(user, 1, REF, FACT_DECIDED, fact(user, 0, "store")),
            memory_event(user, 2, REF, FACT_DECIDED, fact(user, 0, "retract")),
            memory_event(user, 2, REF, EDGE_REMOVED, edge_removed("NEXT", a, c, "test")),
        ],
        [
            memory_event(user, 2, REF, NODE_DORMANT, node_dormant(c, "cold")),
        ],
        [
            memory_event(user, 3, REF, NODE_REAWAKENED, node_reawakened(c, "needed")),
            memory_event(user, 3, REF, NODE_REMOVED, node_removed(c, "event", "test")),
            memory_event(gone, 4, REF, SUBJECT_ERASED, erased),
        ],
    ]


def test_every_statement_the_adapter_sends_runs_over_bolt(bolt_driver: neo4j.Driver, unique_name: str) -> None:
    user, gone = f"bolt-{unique_name}"[:60], f"gone-{unique_name}"[:60]

    def ids(*parts: str) -> str:
        return stable_id(unique_name, *parts)

    executor = Recording(bolt_driver, max_rows=1, create_index=False)
    executor.sent = []
    sink = GraphSink(executor)
    sink.setup()
    try:
        for batch in memory(user, gone, ids):
            sink.apply(plan_batch(batch))
        reads: list[tuple[str, dict[str, object]]] = [
            (nodes.node_page(), {"after": "", "limit": 5}), (nodes.count_nodes(), {}),
            (nodes.duplicate_node_ids(), {}), (nodes.nodes_by_id(), {"ids": [ids("a")]}),
            (edges.edges_from(), {"ids": [ids("a")]}), (edges.count_edges(), {}), (edges.duplicate_edge_ids(), {}),
            (facts.facts_of_user(), {"user_id": user, "status": "retracted"}),
            (expand.expand_from_seeds(2, ["REF"], same_user=True), {"seeds": [ids("a")], "layers": ["USER"],
                                                                     "limit": 5, "user_id": user}),
            (expand.edges_among(), {"ids": [ids("a"), ids("b")]}),
            (subjects.count_subject_nodes(), {"user_id": gone, "kept_prefix": "code_"}),
        ]  # fmt: skip
        for statement, params in reads:
            executor.run(statement, params)
        found = CypherExpander(executor).expand([ids("a")], Viewer(user), ["USER"], ["REF"], 2, 5)
        assert [r.node_id for r in found.records] == [ids("b")]
        assert executor.run(subjects.count_subject_nodes(), {"user_id": gone, "kept_prefix": "code_"}) == [{"count": 0}]
    finally:
        executor.run(nodes.remove_nodes(), {"ids": [ids(p) for p in "abcd"]})
        sink.close()
    shapes = {
        "merge_nodes": "SET n:", "merge_edges": "MERGE (a)-[r:", "remove_edges": "DELETE r",
        "merge_facts": facts.merge_facts(), "remove_nodes": nodes.remove_nodes(), "set_dormant": nodes.set_dormant(),
        "sweep_subject_placeholders": subjects.sweep_subject_placeholders(),
        "erase_subject_chunk": subjects.erase_subject_chunk(), "visible_expansion": "all(x IN nodes(p) WHERE x.layer",
    }  # fmt: skip
    missing = [name for name, shape in shapes.items() if not any(shape in sent for sent in executor.sent)]
    assert not missing, f"never sent over Bolt: {missing}"
