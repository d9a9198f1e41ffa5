"""LoCoMo smoke: one real conversation through the Trace and System 1, recall far above chance."""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from engram.benchmarks import locomo

LOCOMO_DIR = Path(__file__).resolve().parents[2].parent / "shared" / "benchdata" / "locomo"


@pytest.fixture(scope="module")
def one_conversation(tmp_path_factory: pytest.TempPathFactory) -> Path:
    files = sorted(LOCOMO_DIR.glob("*.json"), key=lambda p: p.stat().st_size)
    if not files:
        pytest.fail(f"no LoCoMo files under {LOCOMO_DIR} (shared/benchdata must sit beside the repository)")
    folder = tmp_path_factory.mktemp("locomo")
    shutil.copy(files[0], folder / files[0].name)
    (folder / "notes.json").write_text('{"not": "a conversation"}')
    return folder


def test_bench_recall_is_far_above_chance(one_conversation: Path) -> None:
    args = argparse.Namespace(data=one_conversation, preset="balanced", budget=1000, no_vectors=False, json=True)
    result = locomo.run(args)
    assert result["conversations"] == 1
    questions = result["questions"]
    assert isinstance(questions, int) and questions > 50
    # ~400 turns: a random top 10 finds ~2.5% of the evidence
    recall5, recall10 = result["recall@5"], result["recall@10"]
    assert isinstance(recall5, float) and isinstance(recall10, float)
    assert recall10 > 0.5
    assert recall5 <= recall10
    assert isinstance(result["bm25_recall@10"], float) and result["bm25_recall@10"] > 0.3
    assert isinstance(result["vector_recall@10"], float) and result["vector_recall@10"] > 0.2
    by_category = result["recall@10_by_category"]
    assert isinstance(by_category, dict) and set(by_category) <= {"1", "2", "3", "4"}
    assert result["path"] == "in-process"
    assert result["fallbacks"] == {}
    assert result["skipped_conversations"] == {}


def test_the_list_shaped_release_file_gives_the_same_results(one_conversation: Path, tmp_path: Path) -> None:
    """Newer LoCoMo releases ship all conversations in one list-shaped ``locomo10.json``."""
    flat = next(p for p in one_conversation.glob("*.json") if p.name != "notes.json")
    data = json.loads(flat.read_text(encoding="utf-8"))
    conversation = {k: v for k, v in data.items() if k != "qa"}
    (tmp_path / "locomo10.json").write_text(
        json.dumps([{"sample_id": flat.stem, "conversation": conversation, "qa": data["qa"]}])
    )
    results = [
        locomo.run(argparse.Namespace(data=folder, preset="balanced", budget=1000, no_vectors=False, json=True))
        for folder in (one_conversation, tmp_path)
    ]
    keys = ("conversations", "questions", "recall@5", "recall@10", "recall@10_by_category", "budget_recall@1000")
    assert [{k: r[k] for k in keys} for r in results[1:]] == [{k: results[0][k] for k in keys}]


def test_lists_read_from_qdrant_and_a_mostly_cold_memory_rank_as_the_views_own(one_conversation: Path) -> None:
    """Issue 50: System 1 reads its lists from Qdrant (embedded), and with the view holding only
    the last 50 turns the rest from Qdrant, without losing recall."""
    args = argparse.Namespace(
        data=one_conversation, preset="balanced", budget=1000, no_vectors=False, json=True, qdrant_lists=True,
        hot_set=50,
    )  # fmt: skip
    result = locomo.run(args)
    for name in ("lists_from_qdrant", "hot_set"):
        tiered = result[name]
        assert isinstance(tiered, dict)
        assert tiered["recall@10"] == pytest.approx(result["recall@10"], abs=0.005), name
        by_category, own = tiered["recall@10_by_category"], result["recall@10_by_category"]
        assert isinstance(by_category, dict) and isinstance(own, dict)
        assert set(by_category) == set(own)
    capped = result["hot_set"]
    assert isinstance(capped, dict)
    assert capped["hot_share"] < 0.2
    assert capped["cold_reads_per_question"] > 0


def test_the_workers_view_with_a_capped_hot_set_ranks_and_compiles_as_the_uncapped_one(one_conversation: Path) -> None:
    """Issue 50: ENGRAM_VIEW_HOT_TURNS keeps 50 turns of the conversation in RAM and the rest in
    the view's store; recall and the compiled contexts' budget recall do not move."""
    args = argparse.Namespace(
        data=one_conversation, preset="balanced", budget=1000, no_vectors=False, json=True, view_hot_turns=50,
    )  # fmt: skip
    result = locomo.run(args)
    capped = result["view_hot_set"]
    assert isinstance(capped, dict)
    assert capped["recall@10_change"] == pytest.approx(0.0, abs=0.005)
    assert capped["budget_recall@1000_change"] == pytest.approx(0.0, abs=0.005)
    assert capped["ram_share"] < 0.5 and capped["cold_reads_per_question"] > 0
