"""`engram bench chaos` at a small size: SIGKILLs mid-run, while turns, code changes and requests
stream in, lose, duplicate and alter nothing: stores, tables, dreams, answers, and the view each
restart restores from its snapshot (taken every 150 memory events here)."""

from __future__ import annotations

import argparse
import json

import pytest

from engram.benchmarks.chaos import run

pytestmark = pytest.mark.e2e


def test_kills_mid_run_lose_and_duplicate_nothing() -> None:
    """The inputs stream in at 10 a second (26 s), longer than three kills and restarts take
    (about 6 s each): published all at once, a restarted worker could log every input in the
    moment between two looks at the log, on a busy machine, and the third kill would find the run over."""
    args = argparse.Namespace(kills=3, turns=240, users=3, code=None, requests=None, data=None, seed=3, workers=1)
    result = run(argparse.Namespace(**vars(args), rate=10, json=True, view_snapshot_events=150))
    assert result["kills"] == 3
    at = result["logged_inputs_at_kills"]
    assert isinstance(at, list) and all(0 < n < 264 for n in at), f"a kill did not land mid-run: {at}"
    assert result["code_changes"] == 24 and result["answered"] == result["requests"] == 16
    assert isinstance(result["dream_events"], int) and result["dream_events"] > 0 and result["log_complete"]
    assert (result["lost"], result["duplicated"], result["mismatched"]) == (0, 0, 0), json.dumps(result["where"])
    assert result["view_matches_log"] is True, "the view the restarts restored from snapshots is the log's"


def test_a_killed_workers_partitions_are_taken_over_and_nothing_is_lost() -> None:
    """Two workers in one group, killed in turn while the inputs still stream in: the survivor takes
    over the victim's partitions, and afterwards every store matches a clean run, dreams included."""
    args = argparse.Namespace(kills=2, turns=450, users=4, code=None, requests=None, data=None, seed=5, workers=2)
    result = run(argparse.Namespace(**vars(args), rate=15, json=True))
    assert result["workers"] == 2 and result["kills"] == 2
    at = result["logged_inputs_at_kills"]
    assert isinstance(at, list) and all(0 < n < 495 for n in at), f"a kill did not land mid-run: {at}"
    assert result["code_changes"] == 45 and result["answered"] == result["requests"] == 30
    assert isinstance(result["dream_events"], int) and result["dream_events"] > 0 and result["log_complete"]
    assert (result["lost"], result["duplicated"], result["mismatched"]) == (0, 0, 0), json.dumps(result["where"])
