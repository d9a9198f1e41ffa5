"""`engram bench ingest`'s CPU budget and early/late rates, from what the worker reports."""

from __future__ import annotations

from engram.benchmarks.ingest import cpu_budget, early_late, qdrant_point_us, rss_by_fifth
from engram.schemas.events import node_upserted
from engram.sinks.qdrant.plan import point_payload


def test_the_budget_splits_the_workers_cpu_by_stage_and_names_the_rest() -> None:
    budget = cpu_budget(2.0, {"trace": 0.5, "sink:qdrant": 0.25, "view": 0.0}, turns=1000)
    assert budget["cpu_us_per_turn"] == 2000.0
    assert budget["cpu_us_per_turn_by_stage"] == {"sink:qdrant": 250.0, "trace": 500.0, "other": 1250.0}


def test_late_vs_early_compares_the_first_and_last_fifth_at_the_end_of_the_pipeline_and_at_its_front() -> None:
    # 200 warm-up turns done at the start; 1000 turns: the first 200 ingested in 2 s, the last 200 in
    # 4 s. The sinks (1000 memory events after the warm-up's 500) apply the first fifth in 4 s and the
    # last in 1 s: the front ran ahead, and the end of the pipeline sets the run's pace.
    samples = [(10.0, 200.0, 500.0), (12.0, 400.0, 600.0), (13.0, 1000.0, 650.0), (14.0, 1000.0, 700.0),
               (17.0, 1200.0, 1300.0), (18.0, 1200.0, 1500.0)]  # fmt: skip
    rates = early_late(samples, started=10.0, warm=200, turns=1000, applied=(500.0, 1500.0))
    assert (rates["early_turns_per_s"], rates["late_turns_per_s"], rates["late_vs_early"]) == (50.0, 200.0, 4.0)
    assert rates["ingest_late_vs_early"] == 0.5


def test_the_workers_rss_is_reported_by_fifth_of_the_turns_with_the_drain_in_the_last() -> None:
    # (turns ingested, MB) samples: 100 warm-up turns, then 1000 turns; the drain holds 700 MB.
    rss = [(100.0, 300.0), (250.0, 320.0), (300.0, 340.0), (500.0, 400.0), (900.0, 380.0), (1100.0, 500.0),
           (1100.0, 700.0)]  # fmt: skip
    found = rss_by_fifth(rss, warm=100, turns=1000, warmed=290.0)
    assert found == {"after_warm_up": 290.0, "by_fifth": [340.0, 400.0, 0.0, 380.0, 700.0], "peak": 700.0}


def test_the_qdrant_point_bound_is_measured_alone_with_and_without_the_sinks_payload() -> None:
    found = qdrant_point_us(n=300)
    assert found["payload_fields"] == len(point_payload(node_upserted("n", "event", "USER", 0, text="t"), []))
    assert 0 < found["no_payload"] < found["full_payload"]
    assert found["filter_fields_only"] < found["full_payload"]
