"""`engram bench trust` at a small size: the gate lets nothing through and changes no ranking; sealing is measured."""

from __future__ import annotations

import argparse

from engram.benchmarks.trust import run


def test_gated_compiles_leak_nothing_and_rank_as_if_alone() -> None:
    result = run(argparse.Namespace(nodes=2000, users=6, requests=30, sample=2, data=None, seal_events=2000, json=True))
    assert result["unauthorized_items"] == 0 and result["rankings_identical"] is True
    ratio = result["authorization_cost_ratio"]
    assert isinstance(ratio, float) and ratio > 0  # measured, not asserted: timings vary on a shared machine
    sealing = result["encryption_append_ratio"]
    assert isinstance(sealing, float) and sealing > 0
    sizes = result["encryption_sizes"]
    assert isinstance(sizes, dict) and sizes["events"] == 2000 and sizes["fsync_per_batch"] is True
    assert {"users", "partitions", "batch", "rounds", "value_bytes_avg"} <= set(sizes)
    assert result["erasure_residual_items"] == 0 and result["others_unchanged"] is True
    erased = result["erased_user_nodes"]
    assert isinstance(erased, int) and erased > 0
