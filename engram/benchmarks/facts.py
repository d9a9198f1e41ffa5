"""Facts: candidate facts reconciled per second (CLIPS included) and extractor precision/recall.

The workload is deterministic: turns round-robin over users, each with a few candidates mixing
single-valued changes, multi-valued additions, exact and near duplicates, negations and
low-confidence noise, reconciled one turn (batch) at a time on one worker, as the Faust agent
does. ``facts_per_s`` is wall clock, ``facts_per_cpu_s`` this process's CPU time (the fairer
number on a shared machine). The same run measures the callback-similarity variant and the
naive design (one fact per run with an environment reset before each) as ratios. The
extractor is scored on the labeled utterances in ``benchmarks/data/facts`` (package data, also
read by the extractor tests; ``LABELED_DIR``): the development set
the patterns were written against, and the held-out files (utterances_holdout*.jsonl), reported
separately and combined as ``holdout_precision`` / ``holdout_recall``.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Final

from tqdm import tqdm

from engram.benchmarks import facts_locomo
from engram.benchmarks.facts_evaluation import labeled_items, score_extraction
from engram.processors.facts.extractor import PatternExtractor, Utterance
from engram.processors.facts.model import CandidateFact, UserFacts
from engram.processors.facts.reconciler import CALLBACK, PAPER, FactReconciler, ReconcilerConfig

_BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
# Package data beside this module (the tests read the same files; there is one copy).
LABELED_DIR: Final = Path(__file__).resolve().parent / "data" / "facts"
_COMPANIES = ("Google", "Meta", "Stripe", "Shopify", "Netflix", "Siemens", "Deloitte", "Airbus", "Spotify", "SAP")
_CITIES = ("Toronto", "Berlin", "Lisbon", "Austin", "Osaka", "Denver", "Mountain View", "Menlo Park", "Leeds")
_LANGS = ("Python", "Go", "Rust", "French", "Spanish", "German", "Mandarin", "Java", "Hindi", "Tamil", "Swahili")
_LIKES = tuple(f"dish {i}" for i in range(40)) + ("sushi", "jazz", "hiking", "tennis", "chess", "coffee")
_TASKS = tuple(f"finish report {i}" for i in range(30))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--users", type=int, default=200, help="distinct users, round-robin")
    parser.add_argument("--turns", type=int, default=6_000, help="turns (batches) to reconcile")
    parser.add_argument("--per-turn", type=int, default=4, help="candidates per turn")
    parser.add_argument("--naive-facts", type=int, default=1_000, help="facts for the reset-per-fact baseline")
    parser.add_argument("--profile", action="store_true", help="print a cProfile summary to stderr")
    parser.add_argument(
        "--locomo",
        type=Path,
        default=None,
        help="a folder of LoCoMo conversations: score the extractor against their observation annotations",
    )
    parser.add_argument(
        "--locomo-held-out",
        default="42,43",
        help="conversations (file stems) kept aside from development, reported apart",
    )
    parser.add_argument(
        "--labeled-dir",
        type=Path,
        default=LABELED_DIR,
        help="folder with utterances.jsonl and utterances_holdout*.jsonl",
    )


def _turn(i: int, per_turn: int) -> list[CandidateFact]:
    """Deterministic candidates for turn ``i``: the mix cycles with the index."""
    out: list[CandidateFact] = []
    for j in range(per_turn):
        k = i * per_turn + j
        kind = k % 10
        src = (f"turn-{i}",)
        if kind in (0, 1):
            out.append(CandidateFact("user", "works_at", _COMPANIES[(k // 10) % len(_COMPANIES)], 0.9, "user", "", src))
        elif kind == 2:
            out.append(CandidateFact("user", "lives_in", _CITIES[(k // 7) % len(_CITIES)], 0.85, "user", "", src))
        elif kind in (3, 4):
            out.append(CandidateFact("user", "speaks_language", _LANGS[(k // 3) % len(_LANGS)], 0.9, "user", "", src))
        elif kind == 5:
            out.append(CandidateFact("user", "likes", _LIKES[(k // 5) % len(_LIKES)], 0.8, "user", "", src))
        elif kind == 6:
            out.append(CandidateFact("user", "needs_to", _TASKS[(k // 11) % len(_TASKS)], 0.9, "user", "", src))
        elif kind == 7:
            out.append(CandidateFact("user", "stopped", _LANGS[(k // 13) % len(_LANGS)], 0.9, "user", "", src))
        elif kind == 8:
            typo = _COMPANIES[(k // 10) % len(_COMPANIES)] + "e"
            out.append(CandidateFact("user", "works_at", typo, 0.9, "user", "", src))
        else:
            out.append(CandidateFact("user", "likes", "pineapple pizza", 0.2, "user", "", src))
    return out


def _workload(users: int, turns: int, per_turn: int) -> list[tuple[str, int, list[CandidateFact]]]:
    return [(f"user-{i % users}", _BASE_MS + i * 60_000, _turn(i, per_turn)) for i in range(turns)]


def _reconcile_all(
    config: ReconcilerConfig, work: list[tuple[str, int, list[CandidateFact]]], label: str
) -> tuple[float, float, Counter[str], dict[str, UserFacts]]:
    """Wall and CPU seconds (this process) to reconcile the workload, the decisions, the states."""
    reconciler = FactReconciler(config)
    states: dict[str, UserFacts] = {}
    decisions: Counter[str] = Counter()
    start, cpu_start = time.perf_counter(), time.process_time()
    for user, t, cands in tqdm(work, desc=label, file=sys.stderr, mininterval=1.0):
        state = states.get(user)
        if state is None:
            state = states[user] = reconciler.new_state(user)
        for event in reconciler.reconcile(state, cands, event_time_ms=t):
            decisions[str(event["change"][1].get("decision"))] += 1
    return time.perf_counter() - start, time.process_time() - cpu_start, decisions, states


def _naive_per_fact(n: int) -> tuple[float, float]:
    """The design the issue warns about: the same reconciler, one fact per run, with an
    environment reset before each. Returns (facts per CPU second, reset microseconds)."""
    reconciler = FactReconciler(PAPER)
    work = _workload(50, n, 1)
    states: dict[str, UserFacts] = {}
    start = time.process_time()
    for user, t, cands in work:
        state = states.setdefault(user, reconciler.new_state(user))
        reconciler.engine.reset()  # the cost being measured: a reset per fact
        reconciler.reconcile(state, cands, event_time_ms=t)
    elapsed = time.process_time() - start
    reset_start = time.process_time()
    for _ in range(50):
        reconciler.engine.reset()
    reset_us = (time.process_time() - reset_start) / 50 * 1e6
    return (n / elapsed if elapsed > 0 else 0.0), reset_us


def _labeled(folder: Path, name: str) -> list[dict[str, Any]]:
    path = folder / name
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def _speech(folder: Path, extractor: PatternExtractor) -> dict[str, object]:
    """The natural-speech suite (speech.jsonl, developed against; speech_holdout.jsonl, kept aside)."""
    out: dict[str, object] = {}
    for name in ("speech", "speech_holdout"):
        path = folder / f"{name}.jsonl"
        if path.exists():
            p, r, _ = _scored(_labeled(folder, path.name), extractor)
            out[f"{name}_precision"], out[f"{name}_recall"] = p, r
    return out


def _holdout_names(folder: Path) -> list[str]:
    """Every held-out file: utterances_holdout.jsonl, utterances_holdout2.jsonl, ... in order."""
    return sorted((p.name for p in folder.glob("utterances_holdout*.jsonl")), key=lambda n: (len(n), n))


def _scored(rows: list[dict[str, Any]], extractor: PatternExtractor) -> tuple[float, float, int]:
    items = labeled_items(rows, extractor)
    score = score_extraction(items)
    return round(score.precision, 4), round(score.recall, 4), sum(len(p) for _, p in items)


def _extraction(folder: Path) -> dict[str, object]:
    """``precision``/``recall`` over every labeled file; ``*_dev`` on the development set the
    patterns were written against; ``holdout_precision``/``holdout_recall`` over all held-out
    files combined (the honest generalization numbers), and per held-out file."""
    extractor = PatternExtractor()
    dev = _labeled(folder, "utterances.jsonl")
    holdouts = {name: _labeled(folder, name) for name in _holdout_names(folder)}
    held = [row for rows in holdouts.values() for row in rows]
    p_all, r_all, n_all = _scored(dev + held, extractor)
    p_dev, r_dev, _ = _scored(dev, extractor)
    p_held, r_held, _ = _scored(held, extractor)
    result: dict[str, object] = {
        "precision": p_all,
        "recall": r_all,
        "labeled_utterances": len(dev) + len(held),
        "candidates": n_all,
        "precision_dev": p_dev,
        "recall_dev": r_dev,
        "holdout_precision": p_held,
        "holdout_recall": r_held,
        "holdout_utterances": len(held),
        "holdout_files": list(holdouts),
    }
    for name, rows in holdouts.items():
        suffix = name.removeprefix("utterances_").removesuffix(".jsonl")
        p_file, r_file, _ = _scored(rows, extractor)
        result[f"precision_{suffix}"] = p_file
        result[f"recall_{suffix}"] = r_file
    result.update(_speech(folder, extractor))
    texts = [Utterance(row["text"]) for row in dev + held] * 20
    start = time.perf_counter()
    for utt in texts:
        extractor.extract([utt])
    result["extract_utterances_per_s"] = round(len(texts) / (time.perf_counter() - start), 1)
    return result


def run(args: argparse.Namespace) -> dict[str, object]:
    work = _workload(args.users, args.turns, args.per_turn)
    total = sum(len(c) for _, _, c in work)
    profiler = cProfile.Profile() if args.profile else None
    if profiler is not None:
        profiler.enable()
    elapsed, cpu, decisions, states = _reconcile_all(PAPER, work, "reconcile (precomputed similarity)")
    if profiler is not None:
        profiler.disable()
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(15)
        print(out.getvalue(), file=sys.stderr)
    cb_elapsed, cb_cpu, _, _ = _reconcile_all(CALLBACK, work, "reconcile (callback similarity)")
    naive, reset_us = _naive_per_fact(args.naive_facts)
    facts_per_s = total / elapsed
    active = [len(s.facts) for s in states.values()]
    sample = max(states.values(), key=lambda s: len(s.facts))
    rt_start = time.perf_counter()
    for _ in range(200):
        UserFacts.from_dict(json.loads(json.dumps(sample.to_dict())))
    roundtrip_us = (time.perf_counter() - rt_start) / 200 * 1e6
    result: dict[str, object] = {
        "facts_per_s": round(facts_per_s, 1),
        "facts_per_cpu_s": round(total / cpu, 1),
        "batches": len(work),
        "candidates_reconciled": total,
        "users": args.users,
        "batch_us": round(elapsed / len(work) * 1e6, 1),
        "facts_per_s_callback_similarity": round(total / cb_elapsed, 1),
        "facts_per_cpu_s_callback_similarity": round(total / cb_cpu, 1),
        "precomputed_vs_callback_cpu": round(cb_cpu / cpu, 3),
        "facts_per_cpu_s_reset_per_fact": round(naive, 1),
        "batched_vs_reset_per_fact_cpu": round(total / cpu / naive, 2) if naive else None,
        "env_reset_us": round(reset_us, 1),
        "decisions": dict(sorted(decisions.items())),
        "active_facts_per_user_mean": round(sum(active) / len(active), 2),
        "state_json_roundtrip_us": round(roundtrip_us, 1),
        "state_json_roundtrip_facts": len(sample.facts),
    }
    result.update(_extraction(args.labeled_dir))
    if args.locomo is not None:
        held = [name for name in args.locomo_held_out.split(",") if name]
        locomo = facts_locomo.measure(args.locomo, PatternExtractor(), held_out=held)
        result.update({name: locomo[name] for name in _LOCOMO_HEADLINE})
        result["locomo"] = locomo
    return result


_LOCOMO_HEADLINE: Final = ("observation_coverage", "facts_per_100_turns", "supported_share", "instruction_share")
