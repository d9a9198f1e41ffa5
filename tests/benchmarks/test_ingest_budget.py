"""`engram bench ingest`'s CPU budget and early/late rates, from what the worker reports."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from engram.benchmarks.ingest_bounds import qdrant_point_us
from engram.benchmarks.ingest_measures import (
    WorkerSample,
    by_thread,
    cpu_budget,
    cpu_by_fifth,
    early_late,
    gc_budget,
    rss_by_fifth,
)
from engram.schemas.events import node_upserted
from engram.sinks.qdrant.plan import point_payload
from engram.streams.runner import anon_rss_bytes, thread_cpu_seconds


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


def test_the_workers_rss_is_reported_by_fifth_of_the_memory_events_applied() -> None:
    # (memory events applied, RSS MB, anonymous MB): 500 applied by the warm-up, then 1000 more.
    rss = [_memory(500.0, 300.0, 200.0), _memory(650.0, 320.0, 210.0), _memory(700.0, 340.0, 230.0),
           _memory(900.0, 400.0, 290.0), _memory(1300.0, 380.0, 260.0), _memory(1500.0, 500.0, 390.0),
           _memory(1500.0, 700.0, 590.0)]  # fmt: skip
    found = rss_by_fifth(rss, applied=(500.0, 1500.0), warmed=290.0)
    assert found == {"after_warm_up": 290.0, "by_fifth": [340.0, 400.0, 0.0, 380.0, 700.0],
                     "anon_by_fifth": [230.0, 290.0, 0.0, 260.0, 590.0], "peak": 700.0}  # fmt: skip


def test_the_qdrant_point_bound_is_measured_alone_with_and_without_the_sinks_payload() -> None:
    found = qdrant_point_us(n=300)
    assert found["payload_fields"] == len(point_payload(node_upserted("n", "event", "USER", 0, text="t"), []))
    assert 0 < found["no_payload"] < found["full_payload"]
    assert found["filter_fields_only"] < found["full_payload"]


def test_the_cpu_by_thread_names_python_and_native_threads_of_a_live_process() -> None:
    """A child busy on a Python thread, with a librdkafka client's native threads beside it: the
    child's CPU shows under ``python`` and its client's threads under ``rdk:…``, and the run's
    split by thread keeps only the names that spent CPU in it."""
    busy = (
        "import confluent_kafka, sys, threading, time\n"
        "p = confluent_kafka.Producer({'bootstrap.servers': '127.0.0.1:9', 'log_level': 0})\n"
        "def spin():\n"
        "    end = time.thread_time() + 0.5\n"
        "    while time.thread_time() < end: pass\n"
        "    print('done', flush=True); time.sleep(30)\n"  # alive: an ended thread's CPU is in no name's sum
        "print('ready', flush=True); sys.stdin.readline()\n"
        "threading.Thread(target=spin, daemon=True).start(); time.sleep(30)\n"
    )
    argv = [sys.executable, "-c", busy]
    with subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) as child:  # noqa: S603 - our own script
        try:
            assert child.stdin is not None and child.stdout is not None and child.stdout.readline() == b"ready\n"
            before = thread_cpu_seconds(child.pid)
            child.stdin.write(b"go\n")
            child.stdin.flush()
            assert child.stdout.readline() == b"done\n"
            after = thread_cpu_seconds(child.pid)
        finally:
            child.kill()
    assert "rdk:main" in after and "rdk:broker" in after
    assert after["python"] - before.get("python", 0.0) >= 0.45  # the spin's 0.5 s, to the clock's tick
    assert by_thread(before, after, turns=1000)["python"] == round((after["python"] - before["python"]) * 1000, 1)
    assert by_thread({"python": 1.0, "rdk:main": 2.0}, {"python": 1.5, "rdk:main": 2.0}, turns=100) == {
        "python": 5000.0
    }


def test_the_anonymous_memory_of_a_process_counts_what_it_wrote_to_its_heap() -> None:
    code = "import sys, time; held = b'x' * 200_000_000; print('ready', flush=True); time.sleep(30)"
    with subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True) as child:  # noqa: S603 - our own code
        try:
            assert child.stdout is not None and child.stdout.readline().strip() == "ready"
            anon = anon_rss_bytes(child.pid)
            pages = int(Path(f"/proc/{child.pid}/statm").read_text().split()[1]) * os.sysconf("SC_PAGE_SIZE")
            assert 200_000_000 <= anon <= pages
        finally:
            child.kill()


def test_the_cpu_per_turn_and_the_collectors_share_are_reported_by_fifth_of_the_memory_events_applied() -> None:
    # (memory events applied, worker CPU s, collector CPU s, broker CPU s, wall s, graph server CPU
    # s, wall s in the stores' commit stage): 500 applied by the warm-up, then 1000 more for 100
    # turns; each fifth costs more CPU than the one before, the broker's the same, the graph
    # server's grows, and the worker waits more in the last one, on the store.
    samples = [_cpu(500.0, 10.0, 1.0, 5.0, 100.0, 2.0, 1.0), _cpu(600.0, 10.1, 1.01, 5.05, 100.1, 2.01, 1.0),
               _cpu(700.0, 10.2, 1.02, 5.1, 100.2, 2.02, 1.0), _cpu(900.0, 10.5, 1.1, 5.2, 100.5, 2.04, 1.1),
               _cpu(1100.0, 10.9, 1.2, 5.3, 100.9, 2.07, 1.2), _cpu(1300.0, 11.4, 1.3, 5.4, 101.4, 2.1, 1.3),
               _cpu(1500.0, 12.0, 1.6, 5.5, 103.4, 2.2, 3.0)]  # fmt: skip
    found = cpu_by_fifth(samples, applied=(500.0, 1500.0), turns=100)
    assert found["cpu_us_per_turn_by_fifth"] == [10000.0, 15000.0, 20000.0, 25000.0, 30000.0]
    assert found["gc_share_by_fifth"] == [0.1, 0.267, 0.25, 0.2, 0.5]
    assert found["broker_cpu_us_per_turn_by_fifth"] == [5000.0] * 5
    assert found["graph_server_cpu_us_per_turn_by_fifth"] == [1000.0, 1000.0, 1500.0, 1500.0, 5000.0]
    assert found["worker_busy_by_fifth"] == [1.0, 1.0, 1.0, 1.0, 0.3]
    assert found["commit_wall_us_per_turn_by_fifth"] == {"store:graph": [0.0, 5000.0, 5000.0, 5000.0, 85000.0]}


def _memory(applied: float, rss_mb: float, anon_mb: float) -> WorkerSample:
    return WorkerSample(applied, rss_mb, anon_mb, cpu_s=0.0, gc_s=0.0, broker_cpu_s=0.0, wall_s=0.0)


def _cpu(applied: float, cpu: float, gc: float, broker: float, wall: float, graph: float, store: float) -> WorkerSample:
    return WorkerSample(applied, 0.0, 0.0, cpu, gc, broker, wall, graph, {"store:graph": store})


def test_the_collectors_budget_is_by_generation_and_a_share_of_the_workers_cpu() -> None:
    found = gc_budget(4.0, {"0": 0.1, "1": 0.2, "2": 0.5}, turns=1000)
    assert found == {"gc_cpu_us_per_turn": {"0": 100.0, "1": 200.0, "2": 500.0}, "gc_share": 0.2}
