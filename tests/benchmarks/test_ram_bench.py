"""`engram bench ram` sizes a worker's structures as a history grows (issue 50)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from engram.benchmarks.ram import reached_bytes
from engram.streams.cli import main as cli_main


def test_bench_ram_prints_the_bytes_each_structure_grows_by_a_turn(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "ram", "--turns", "3000", "--users", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    grown = out["bytes_per_turn"]
    assert set(grown) == {"view", "graph_engine", "trace_step", "facts_step", "dream_step", "trace_table",
                          "facts_table", "dream_table"}  # fmt: skip
    assert grown["view"] > 1024  # a turn's vector row alone is 1 KB (256 float32)
    assert out["bytes_per_turn_total"] == pytest.approx(sum(grown.values()), abs=len(grown))
    assert {"_blocks", "_records", "_edges"} <= set(out["view_bytes_per_turn"])
    assert out["view_bytes_per_turn"]["_blocks"] > 0 and out["graph_store_bytes_per_turn"]
    assert out["measured_turns"] == [1000, 3000] and out["nodes"] > 3000


def test_bench_ram_with_a_hot_set_holds_the_turns_past_it_in_the_store(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli_main(["bench", "ram", "--turns", "3000", "--users", "100", "--view-hot-turns", "5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["view_hot_turns"] == 5
    assert out["view_nodes_in_ram"] <= out["nodes"] - 100 * (30 - 5)  # each user's 30 turns, 5 of them in RAM
    assert out["view_bytes_per_turn"]["_archive"] > 0


def test_reached_bytes_counts_a_shared_object_once_and_an_array_by_the_buffer_it_owns() -> None:
    shared = np.zeros(1000, dtype=np.float64)
    first, second = reached_bytes([[shared], [shared, shared[:10]]])
    assert first >= shared.nbytes and second < shared.nbytes
    (alone,) = reached_bytes([shared[:10]])  # a view alone: its base's buffer too
    assert alone >= shared.nbytes
