"""`engram bench ingest`'s CPU budget and early/late rates, from what the worker reports."""

from __future__ import annotations

from engram.benchmarks.ingest import cpu_budget, early_late


def test_the_budget_splits_the_workers_cpu_by_stage_and_names_the_rest() -> None:
    budget = cpu_budget(2.0, {"trace": 0.5, "sink:qdrant": 0.25, "view": 0.0}, turns=1000)
    assert budget["cpu_us_per_turn"] == 2000.0
    assert budget["cpu_us_per_turn_by_stage"] == {"sink:qdrant": 250.0, "trace": 500.0, "other": 1250.0}


def test_late_vs_early_compares_the_first_and_last_fifth_of_the_turns() -> None:
    # 200 warm-up turns done at the start; 1000 turns: the first 200 take 2 s, the last 200 take 4 s.
    samples = [(10.0, 200.0), (12.0, 400.0), (13.0, 1000.0), (17.0, 1200.0)]
    rates = early_late(samples, started=10.0, warm=200, turns=1000)
    assert (rates["early_turns_per_s"], rates["late_turns_per_s"], rates["late_vs_early"]) == (100.0, 50.0, 0.5)
