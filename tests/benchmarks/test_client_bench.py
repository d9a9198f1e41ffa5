"""`engram bench client` at a small size, through the CLI as a user runs it: one JSON object with
the SDK's ask round trip beside the worker's compile time from the same answers, both codec modes
working, a refusal raised well under its goal, and the stack's memory kept across down/up."""

from __future__ import annotations

import json

import pytest

from engram.streams.cli import main as cli_main

pytestmark = pytest.mark.e2e


def test_the_client_bench_prints_its_measurements(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "client", "--asks", "12", "--refusals", "2", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["asks"] == 12
    assert 0 < result["compile_p50_ms"] <= result["ask_p50_ms"] <= result["ask_p99_ms"]
    assert result["single_object_ok"] is True and result["registry_mode_ok"] is True
    assert 0 < result["refusal_reply_ms"] < 1000
    assert result["restart_kept"] is True, result["restart_lost"]
    assert result["restart_slb_hit"] is True
    assert result["kept_facts"] > 0 and result["kept_items"] > 0 and result["kept_graph_nodes"] > 0
    assert result["snapshot_records"] > 0 and result["stack_up_restored_s"] > 0
