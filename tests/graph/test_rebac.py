"""Restrict before traversal: every query sees only the principal's nodes, as if no other existed."""

from __future__ import annotations

import json
import re
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.results import to_json
from engram.processors.graph.types import QUERY_TYPES, NodeType, Principal, QueryError
from tests.graph.graphs import USER, RandomGraph, shared_graphs, vector

NODE_ID = re.compile(r"\bn\d+\b")
layer_sets = st.sets(st.sampled_from(["SYSTEM", "ORGANIZATION", "TEAM", "USER"]))


def _queries(anchor: str, other: str) -> list[GraphQuery]:
    probe = vector(10_000)
    params: dict[str, dict[str, Any]] = {
        "traversal": {"node": anchor, "max_depth": 4}, "pattern": {"types": ["fact", "episode"]},
        "temporal": {"start_ms": 0, "end_ms": 2**40}, "similarity": {"vector": probe}, "resolve": {"node": anchor},
        "bm25": {"text": "api cache redis"}, "hybrid": {"text": "api cache", "vector": probe}, "pagerank": {},
        "degree": {}, "betweenness": {}, "bfs": {"source": anchor, "target": other},
        "dijkstra": {"source": anchor, "target": other}, "revise": {"node": anchor}, "gaps": {},
        "analogy": {"node": anchor}, "consolidate": {"threshold": 0.5}, "drift": {},
    }  # fmt: skip
    return [GraphQuery(name, params[name] | {"limit": 50}) for name in QUERY_TYPES]


def _answers(engine: GraphEngine, principal: Principal, queries: list[GraphQuery]) -> list[str]:
    out = []
    for query in queries:
        try:
            out.append(json.dumps(to_json(engine.run(principal, query)), sort_keys=True))
        except QueryError as error:
            out.append(f"error: {error}")
    return out


@settings(max_examples=60, deadline=None)
@given(shared_graphs(), layer_sets)
def test_no_query_reveals_or_depends_on_an_invisible_node(graph: RandomGraph, layers: set[str]) -> None:
    principal = Principal.of(USER, sorted(layers))
    assert graph.layers is not None and graph.owners is not None
    visible = [i for i in range(graph.n) if principal.sees(graph.layers[i], graph.owners[i], None)]
    anchor, other = (f"n{visible[0]}", f"n{visible[-1]}") if visible else ("n0", "n0")
    queries = _queries(anchor, other)
    everything, only_visible = GraphEngine(store=graph.store()), GraphEngine(store=graph.store(visible.__contains__))
    answers = _answers(everything, principal, queries)
    for answer in answers:  # an error names only the id asked for, the same whether it exists or not
        assert answer.startswith("error") or {int(n[1:]) for n in NODE_ID.findall(answer)} <= set(visible), answer
    assert answers == _answers(only_visible, principal, queries)


def test_an_invisible_node_is_unknown_to_a_query_that_names_it() -> None:
    graph = RandomGraph([NodeType.FACT] * 2, [1.0] * 2, [0, 0], ["api", "api"], [], ["USER", "USER"], [USER, "bob"])
    engine = GraphEngine(store=graph.store())
    answer = _answers(engine, Principal.of(USER), [GraphQuery("resolve", {"node": "n1"})])
    assert answer[0].startswith("error") and "n1" in answer[0]
