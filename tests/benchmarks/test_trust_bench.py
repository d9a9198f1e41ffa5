"""`engram bench trust` at a small size: the gate lets nothing through and changes no ranking."""

from __future__ import annotations

import argparse

from benchmarks.trust import run


def test_gated_compiles_leak_nothing_and_rank_as_if_alone() -> None:
    result = run(argparse.Namespace(nodes=2000, users=6, requests=30, sample=2, data=None, json=True))
    assert result["unauthorized_items"] == 0 and result["rankings_identical"] is True
    ratio = result["authorization_cost_ratio"]
    assert isinstance(ratio, float) and ratio > 0  # measured, not asserted: timings vary on a shared machine
