"""`engram bench graph` at a small size: every query type timed, the paper's numbers beside."""

from __future__ import annotations

import argparse

from engram.benchmarks.graph import GOALS_MS, queries, run


def test_bench_graph_times_every_query_type_at_each_size() -> None:
    args = argparse.Namespace(nodes=600, repeats=2, slow_repeats=1, seed=7, json=True)
    result = run(args)
    measured = result["600"]
    assert isinstance(measured, dict)
    assert measured["nodes"] == 600 and 1700 <= measured["edges"] <= 1800  # 3 out-edges a node, self-loops dropped
    for name in queries(600, 7):
        assert measured[f"{name}_ms"] >= 0 and measured[f"{name}_first_ms"] >= 0
    assert "goals" not in result  # goals are judged at 100,000 nodes only
    assert set(GOALS_MS) <= set(queries(600, 7))
