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
