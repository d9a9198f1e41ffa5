"""Semantic Inertia measurements, Atlas concept centroids, and the SLB bench on a tiny LoCoMo file."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pytest

from engram.benchmarks import slb as bench
from engram.benchmarks import slb_memory
from engram.processors.slb import SlbConfig
from engram.processors.slb.concepts import concept_centroids
from engram.processors.slb.inertia import best_centroid, best_recent, consecutive, embedder_inertia, profile
from tests.compiler.memory import embedder


def _rows(*angles: float) -> np.ndarray:
    """Unit vectors in the plane at the given angles (radians): cosines are cos(a − b)."""
    return np.array([[np.cos(a), np.sin(a)] for a in angles], dtype=np.float32)


def test_profile_counts_only_strictly_above_tau() -> None:
    p = profile(np.array([0.2, 0.5, 0.85, 0.9, 0.95]), 0.85)
    assert p.count == 5 and p.above_tau == 0.4 and p.p50 == 0.85 and p.max == 0.95
    assert profile(np.zeros(0), 0.85).count == 0


def test_consecutive_and_best_recent_follow_the_stream() -> None:
    q = _rows(0.0, 0.1, 1.5, 0.05)
    np.testing.assert_allclose(consecutive(q), np.cos([0.1, 1.4, 1.45]), atol=1e-6)
    # q3 is far from q2 but close to q0 and q1: a buffer of the last 1 misses, of the last 3 hits.
    np.testing.assert_allclose(best_recent(q, 1), np.cos([0.1, 1.4, 1.45]), atol=1e-6)
    np.testing.assert_allclose(best_recent(q, 3)[-1], np.cos(0.05), atol=1e-6)
    assert best_recent(q, None)[-1] == pytest.approx(best_recent(q, 3)[-1])
    # With centroids filed per query (here: all at angle 1.5), only those are compared.
    filed = _rows(1.5, 1.5, 1.5, 1.5)
    np.testing.assert_allclose(best_recent(q, 2, filed), np.cos([1.4, 0.0, 1.45]), atol=1e-6)
    np.testing.assert_allclose(best_centroid(q, _rows(0.0, 1.5)), np.cos([0.0, 0.1, 0.0, 0.05]), atol=1e-6)
    assert best_centroid(q, np.zeros((0, 2), dtype=np.float32)).tolist() == [-1.0] * 4


def test_concepts_cover_every_turn_and_coarser_levels_cover_their_children() -> None:
    texts = [
        "We moved the orders database from MySQL to Postgres.",
        "The Postgres database needs a bigger connection pool.",
        "Nightly database backups run at two.",
        "I baked sourdough bread with my sister.",
        "The bread recipe needs more rye flour.",
        "My sister bakes cinnamon rolls on Sundays.",
    ] * 3
    ids = [f"t{i}" for i in range(len(texts))]
    concepts = concept_centroids(ids, embedder().embed(texts))
    assert concepts.centroids.shape == (len(concepts.concept_ids), embedder().dim)
    np.testing.assert_allclose(np.linalg.norm(concepts.centroids, axis=1), 1.0, atol=1e-5)
    covered = {node for members in concepts.members for node in members}
    assert covered == set(ids)
    best, sim = concepts.lookup(embedder().embed([texts[0]])[0])
    assert best >= 0 and -1.0 <= sim <= 1.0


def test_inertia_with_another_embedder_pools_its_streams() -> None:
    questions = [["Where is the cat?", "Where is the cat?"], ["Who baked bread?", "Who went hiking?"]]
    turns = [["The cat sleeps.", "The cat eats."], ["Bread was baked.", "We hiked."]]
    out = embedder_inertia(embedder(), questions, turns, SlbConfig())
    assert out["embedder"] == embedder().name and out["streams"] == 2
    eq9 = out["sim(q_i+1, q_i): Eq. 9 on the question stream"]
    assert isinstance(eq9, dict) and eq9["count"] == 2 and eq9["share_above_tau"] == 0.5


def _tiny_locomo(folder: Path) -> None:
    turns = [
        ("Ann", "I adopted a grey cat named Pixel from the shelter."),
        ("Bob", "Pixel is a lovely name for a cat."),
        ("Ann", "I also started pottery classes on Tuesdays."),
        ("Bob", "My brother moved to Lisbon for a new job."),
        ("Ann", "We went hiking near the lake last weekend."),
        ("Bob", "I bought a red bicycle for commuting."),
    ]
    session = [{"speaker": s, "dia_id": f"D1:{i + 1}", "text": t} for i, (s, t) in enumerate(turns)]
    qa = [
        {"question": "What is the name of Ann's cat?", "evidence": ["D1:1"], "category": 4},
        {"question": "What is the name of Ann's cat?", "evidence": ["D1:1"], "category": 4},
        {"question": "Where did Bob's brother move?", "evidence": ["D1:4"], "category": 4},
        {"question": "Where did Bob's brother move?", "evidence": ["D1:4"], "category": 1},
        {"question": "Is this adversarial?", "evidence": ["D1:2"], "category": 5},
    ]
    data = {"speaker_a": "Ann", "speaker_b": "Bob", "session_1": session, "qa": qa}
    (folder / "1.json").write_text(json.dumps(data), encoding="utf-8")
    (folder / "2.json").write_text(json.dumps({**data, "qa": qa[2:]}), encoding="utf-8")


def test_bench_hits_repeated_questions_without_recall_loss_and_reports_why(tmp_path: Path) -> None:
    _tiny_locomo(tmp_path)
    parser = argparse.ArgumentParser()
    bench.add_arguments(parser)
    out = bench.run(parser.parse_args(["--data", str(tmp_path), "--repeats", "1", "--memory-scale", "3"]))
    assert out["questions"] == 6  # categories 1-4 only
    assert out["hit_rate"] == pytest.approx(3 / 6)  # each repeated question hits the entry its twin filled
    assert out["recall_loss"] == 0.0
    inertia = out["inertia"]
    assert isinstance(inertia, dict)
    eq9 = inertia["sim(q_i+1, q_i): Eq. 9 on the question stream"]
    assert eq9["count"] == 4 and eq9["share_above_tau"] == 0.75  # 3 of 4 consecutive pairs are identical
    scaled = out["scaled"]
    assert isinstance(scaled, dict) and scaled["nodes_per_memory"] == 18
    designs = out["designs"]
    assert isinstance(designs, dict) and set(designs) == {
        "query_centroids",
        "atlas_concepts",
        "neighbourhood_centroids",
    }


def test_distractors_scale_the_memory_deterministically() -> None:
    conv = slb_memory.Conversation("u", [], {"a": "one two three four", "b": "five six seven eight"}, {"a": "D1:1"}, [])
    scaled = slb_memory.with_distractors(conv, ["alpha beta gamma delta", "epsilon zeta eta theta"], 4)
    assert len(scaled.texts) == 8 and len(scaled.events) == 6
    assert scaled == slb_memory.with_distractors(conv, ["alpha beta gamma delta", "epsilon zeta eta theta"], 4)
    assert scaled.dia == conv.dia  # distractors never count as evidence
