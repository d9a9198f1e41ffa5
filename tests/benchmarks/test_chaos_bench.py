"""`engram bench chaos` at a small size: SIGKILLs mid-run lose, duplicate and alter nothing."""

from __future__ import annotations

import argparse

import pytest

from benchmarks.chaos import run

pytestmark = pytest.mark.e2e


def test_kills_mid_run_lose_and_duplicate_nothing() -> None:
    result = run(argparse.Namespace(kills=3, turns=300, users=3, data=None, seed=3, workers=1, rate=0, json=True))
    assert result["kills"] == 3
    at = result["logged_turns_at_kills"]
    assert isinstance(at, list) and all(0 < n < 300 for n in at), f"a kill did not land mid-run: {at}"
    assert (result["lost"], result["duplicated"], result["mismatched"]) == (0, 0, 0), result["where"]


def test_a_killed_workers_partitions_are_taken_over_and_nothing_is_lost() -> None:
    """Two workers in one group, killed in turn while the turns still stream in: the survivor takes
    over the victim's partitions, and afterwards every store matches a clean run."""
    result = run(argparse.Namespace(kills=2, turns=450, users=4, data=None, seed=5, workers=2, rate=15, json=True))
    assert result["workers"] == 2 and result["kills"] == 2
    at = result["logged_turns_at_kills"]
    assert isinstance(at, list) and all(0 < n < 450 for n in at), f"a kill did not land mid-run: {at}"
    assert (result["lost"], result["duplicated"], result["mismatched"]) == (0, 0, 0), result["where"]
