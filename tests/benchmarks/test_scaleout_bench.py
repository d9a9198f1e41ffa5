"""`engram bench scaleout` at a small size: two workers on four partitions derive exactly the events
one worker derives, and each of them ingests a share of the turns."""

from __future__ import annotations

import argparse

import pytest

from engram.benchmarks.scaleout import run

pytestmark = pytest.mark.e2e


def test_two_workers_derive_what_one_derives() -> None:
    result = run(argparse.Namespace(turns=300, users=8, partitions=4, data=None, timeout=300.0, json=True))
    one, two = result["one_worker"], result["two_workers"]
    assert result["identical"], (one["digest"], two["digest"])
    assert one["derived_events"] == two["derived_events"] > 300
    assert [w["turns"] for w in one["per_worker"]] == [300]
    shares = [w["turns"] for w in two["per_worker"]]
    assert sum(shares) == 300 and min(shares) > 0, shares
