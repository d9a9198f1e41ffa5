"""`engram bench dream` runs end to end on one LoCoMo conversation and reports what the issue asks."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engram.streams.cli import main as cli_main

LOCOMO_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "benchdata" / "locomo"


def test_bench_dream_prints_the_dream_census_and_recall_before_and_after(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not (LOCOMO_DIR / "43.json").is_file():
        pytest.fail(f"no LoCoMo files under {LOCOMO_DIR} (shared/benchdata must sit beside the repository)")
    shutil.copy(LOCOMO_DIR / "43.json", tmp_path / "43.json")
    assert cli_main(["bench", "dream", "--data", str(tmp_path), "--cycles", "3", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    keys = ["nodes_before", "nodes_active_after", "phi_eligible", "dormant", "concepts_committed", "rules_committed",
            "rules_rejected", "budget_recall@1000_before", "budget_recall@1000_after", "retention"]  # fmt: skip
    for recall in ("recall@10", "multi_hop_recall@10", "temporal_recall@10"):
        keys += [f"{recall}_before", f"{recall}_after"]
    assert set(keys) <= set(out), set(keys) - set(out)
    assert out["dormant"] == out["phi_eligible"] > 0
    assert out["nodes_active_after"] < out["nodes_before"]
    assert 0.0 < out["retention"] <= 1.0 and out["recall@10_after"] > 0.5
    assert sum(out["held_active_by_reason"].values()) > 0
    used, aged = out["usage"], out["usage"]["held_by_age_only"]  # use it or lose it
    assert used["accessed_kept"] == aged["accessed_kept"] == 1.0
    assert aged["unused_kept"] < 1.0 and aged["control_accessed_kept"] < 1.0  # without its accesses it goes too
    # issue 50: the dormant nodes left the view's RAM for its store
    assert out["dormant_bytes_in_ram"] == 0
    assert out["dormant_in_store"] == out["dormant"]
    assert out["store_bytes_on_disk"] > 0
