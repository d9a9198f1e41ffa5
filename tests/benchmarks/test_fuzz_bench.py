"""`engram bench fuzz` at a small size: every input is dead-lettered with a reason or accepted as
valid, nothing is unaccounted for, and the worker never dies (a binary code file used to crash-loop
the graph sink; a turn from the year 3000 used to be accepted and move its user's event clock)."""

from __future__ import annotations

import argparse

import pytest

from engram.benchmarks.fuzz import run

pytestmark = pytest.mark.e2e

MUST_BE_REFUSED = {
    "truncated_avro", "unknown_fingerprint", "wrong_schema", "empty", "invalid_utf8", "missing_id",
    "time_far_past", "time_far_future", "unsupported_language", "absurd_budget", "no_layers",
    "not_json_graph_params", "binary_code", "injected_instance", "instance_of_another_layer", "unknown_pin_kind",
    "reply_topic_outside", "erasure_without_user", "relationship_of_wrong_kinds",
}  # fmt: skip
VALID = {"duplicate_id", "unknown_parent"}


def test_every_fuzzed_input_is_accounted_for() -> None:
    result = run(argparse.Namespace(n=96, seed=7, timeout=90.0, json=True))
    assert result["unaccounted"] == 0 and result["worker_restarts"] == 0, result
    by_kind = result["by_kind"]
    assert isinstance(by_kind, dict)
    for kind in MUST_BE_REFUSED:
        assert by_kind[kind] == {"dead_lettered": 4}, (kind, by_kind[kind], result["examples"])
    for kind in VALID:
        assert by_kind[kind] == {"accepted": 4}, (kind, by_kind[kind])
