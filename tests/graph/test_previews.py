"""`engram query` shows each node's text beside its id: the engine names the start of the text of
every node a result names, and only of nodes the principal may see."""

from __future__ import annotations

import json

from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.results import to_json
from engram.processors.graph.types import NodeType, Principal
from engram.schemas.records import GraphAnswer
from engram.streams.commands.query import render
from tests.graph.graphs import USER, RandomGraph

LONG = "I moved to Berlin in May, " + "and the flat is near the river " * 10


def test_a_result_comes_with_the_text_of_the_visible_nodes_it_names() -> None:
    graph = RandomGraph([NodeType.FACT] * 3, [1.0] * 3, [0, 1, 2], [LONG, "api cache", "bob's secret api"], [],
                        ["USER"] * 3, [USER, USER, "bob"])  # fmt: skip
    engine = GraphEngine(store=graph.store())
    principal = Principal.of(USER, ["USER"])
    found = to_json(engine.run(principal, GraphQuery("temporal", {"start_ms": 0, "end_ms": 10})))
    texts = engine.previews(principal, {**found, "elsewhere": ["n2", "not-a-node"]})
    assert set(texts) == {"n0", "n1"}, "bob's node is invisible to the principal, and so is its text"
    assert texts["n1"] == "api cache" and texts["n0"].startswith("I moved to Berlin") and len(texts["n0"]) == 120
    answer: GraphAnswer = {
        "query_id": "q", "user_id": USER, "query_type": "temporal", "ok": True, "error": None,
        "result_json": json.dumps(found), "nodes": 2, "events": 0, "elapsed_ms": 1.0, "node_texts": texts,
    }  # fmt: skip
    printed = render(answer)
    assert "node_id=n1" in printed and '"api cache"' in printed and '"I moved to Berlin in May,' in printed
