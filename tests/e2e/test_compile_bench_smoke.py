"""`engram bench compile` on a tiny memory: every request is answered through the broker and the
JSON carries the fields the issue asks for (the latency goals are the bench's business, not this test's)."""

from __future__ import annotations

import argparse
import json

import pytest

from benchmarks import compile as bench

pytestmark = pytest.mark.e2e


def test_small_compile_bench_answers_every_request() -> None:
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    args = parser.parse_args(
        ["--nodes", "400", "--users", "4", "--requests", "20", "--rate", "20", "--timeout", "60"]
        + ["--probe-requests", "10", "--probe-rate", "10", "--floor-requests", "20"]
    )

    result = bench.run(args)

    json.dumps(result)  # JSON-able as printed by `engram bench compile --json`
    assert result["nodes"] == 400
    assert result["edges"] == 400 - 4 * 3  # each user's 100 nodes: sessions start at 0, 40 and 80
    assert result["memory"] == "published as MemoryEvents"
    assert result["missing"] == 0
    assert sum(result["route_counts"].values()) == 20
    assert 0 < result["compile_p50_ms"] <= result["p50_ms"] <= result["p99_ms"]
    assert result["stages_p50_ms"]["total"] == result["compile_p50_ms"]
    probe = result["probe"]
    assert (probe["requests"], probe["missing"], probe["rate"]) == (10, 0, 10.0)
    assert 0 < probe["compile_p50_ms"] <= probe["p50_ms"] <= probe["p99_ms"]
    floor = result["broker_floor"]  # the same trip answered with no compile: 18 timed after 2 warm-up
    assert (floor["requests"], floor["missing"], floor["rate"]) == (18, 0, 20.0)
    assert 0 < floor["p50_ms"] <= floor["p99_ms"]
    assert "with no compile at all" in result["bound"]
