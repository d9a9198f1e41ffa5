"""What `engram bench ingest` derives from the worker's CPU, metrics and memory samples: the CPU
budget by stage and by thread, the garbage collector's part, turns/s of the first and last fifth,
and CPU and RSS by fifth of the history processed."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any


def cpu_budget(cpu_s: float, stages: dict[str, float], turns: int) -> dict[str, Any]:
    per_turn = {stage: round(s / turns * 1e6, 1) for stage, s in sorted(stages.items()) if s > 0}
    per_turn["other"] = round(max(0.0, cpu_s - sum(stages.values())) / turns * 1e6, 1)
    return {"cpu_us_per_turn": round(cpu_s / turns * 1e6, 1), "cpu_us_per_turn_by_stage": per_turn}


def by_thread(before: dict[str, float], after: dict[str, float], turns: int) -> dict[str, float]:
    """The worker's CPU per turn by thread name over the run (`runner.thread_cpu_seconds`): its
    Python threads (``python``: the loop, the step and sink threads, Faust's consumer) and the
    client libraries' own native threads (``rdk:…``: librdkafka's)."""
    spent = {name: after[name] - before.get(name, 0.0) for name in after}
    return {name: round(s / turns * 1e6, 1) for name, s in sorted(spent.items()) if s > 0}


Sample = tuple[float, float, float]  # (time, turns ingested, memory events every sink applied)


def early_late(
    samples: list[Sample], started: float, warm: int, turns: int, applied: tuple[float, float]
) -> dict[str, Any]:
    """Turns/s over the first and the last fifth of the run (from /metrics samples): at the end of
    the pipeline (the memory events all sinks applied, from ``applied[0]`` to ``applied[1]``) and
    at its front (the turns ingested)."""
    early, late = fifths([(t, a) for t, _, a in samples], started, applied[0], applied[1] - applied[0], turns)
    front_early, front_late = fifths([(t, i) for t, i, _ in samples], started, warm, turns, turns)
    return {"early_turns_per_s": round(early, 1), "late_turns_per_s": round(late, 1),
            "late_vs_early": round(late / early, 3),
            "ingest_late_vs_early": round(front_late / front_early, 3)}  # fmt: skip


@dataclass(frozen=True, slots=True)
class WorkerSample:
    """One sample of the worker as the run goes: the memory events every sink has applied, its RSS
    and anonymous memory (MB), its CPU seconds and the collector's, the broker's and the graph
    server's CPU seconds, the wall clock, and the wall seconds its batches have spent so far in
    each stage of the commit order (``engram_commit_stage_seconds``)."""

    applied: float
    rss_mb: float
    anon_mb: float
    cpu_s: float
    gc_s: float
    broker_cpu_s: float
    wall_s: float
    graph_cpu_s: float = 0.0
    commit_s: Mapping[str, float] = field(default_factory=dict)


def rss_by_fifth(rss: Sequence[WorkerSample], applied: tuple[float, float], warmed: float) -> dict[str, Any]:
    """The worker's RSS (MB) after the warm-up, the most it held while each fifth of the history
    was processed, and its peak; ``anon_by_fifth`` the same for its anonymous memory (without the
    files it maps). A fifth is one of the memory events every sink applied, from ``applied[0]`` to
    ``applied[1]``: the end of the pipeline, as ``late_vs_early``, since the turns admitted run
    ahead of it by up to the backlog bound. Flat fifths are memory that does not grow with history."""
    base, total = applied[0], max(applied[1] - applied[0], 1.0)

    def fifth(value: Callable[[WorkerSample], float]) -> list[float]:
        return [round(max((value(s) for s in rss if k / 5 < (s.applied - base) / total <= (k + 1) / 5), default=0.0), 1)
                for k in range(5)]  # fmt: skip

    return {"after_warm_up": round(warmed, 1), "by_fifth": fifth(lambda s: s.rss_mb),
            "anon_by_fifth": fifth(lambda s: s.anon_mb), "peak": round(max(s.rss_mb for s in rss), 1)}  # fmt: skip


def fifths(
    samples: list[tuple[float, float]], started: float, base: float, total: float, turns: int
) -> tuple[float, float]:
    """Turns/s of the first and the last fifth of progress going from ``base`` to ``base + total``."""

    def at(share: float) -> float:
        return next(t for t, done in samples if done - base >= share * total) - started

    fifth = turns / 5
    return fifth / max(at(0.2), 1e-6), fifth / max(at(1.0) - at(0.8), 1e-6)


def cpu_by_fifth(samples: Sequence[WorkerSample], applied: tuple[float, float], turns: int) -> dict[str, Any]:
    """Over each fifth of the memory events applied (from ``applied[0]`` to ``applied[1]``, as
    `rss_by_fifth`): the worker's CPU µs per turn and the share of it the cyclic garbage collector
    took; the broker's and the graph server's CPU µs per turn; ``worker_busy_by_fifth``, the
    worker's CPU seconds per second of the fifth: near 1, it computed all along (one Python
    thread); well under it, it waited (on the broker, the stores, the disk, the backlog); and
    ``commit_wall_us_per_turn_by_fifth``, the wall µs per turn its batches spent in each stage of
    the commit order: where it waited. A fifth's CPU includes the work on the turns admitted ahead
    of it (up to the backlog bound)."""
    base, total = applied[0], max(applied[1] - applied[0], 1.0)
    marks = [next(s for s in samples if s.applied - base >= k / 5 * total) for k in range(6)]
    spans = list(zip(marks, marks[1:], strict=False))

    def per_turn(value: Callable[[WorkerSample], float]) -> list[float]:
        return [round((value(b) - value(a)) / (turns / 5) * 1e6, 1) for a, b in spans]

    stages = {stage: _commit_stage(stage) for stage in sorted({stage for s in samples for stage in s.commit_s})}
    return {"cpu_us_per_turn_by_fifth": per_turn(lambda s: s.cpu_s),
            "gc_share_by_fifth": [round((b.gc_s - a.gc_s) / max(b.cpu_s - a.cpu_s, 1e-9), 3) for a, b in spans],
            "broker_cpu_us_per_turn_by_fifth": per_turn(lambda s: s.broker_cpu_s),
            "graph_server_cpu_us_per_turn_by_fifth": per_turn(lambda s: s.graph_cpu_s),
            "worker_busy_by_fifth": [round((b.cpu_s - a.cpu_s) / max(b.wall_s - a.wall_s, 1e-9), 2) for a, b in spans],
            "commit_wall_us_per_turn_by_fifth": {name: per_turn(of) for name, of in stages.items()}}  # fmt: skip


def _commit_stage(stage: str) -> Callable[[WorkerSample], float]:
    return lambda sample: sample.commit_s.get(stage, 0.0)


def gc_budget(cpu_s: float, gc_s: dict[str, float], turns: int) -> dict[str, Any]:
    """The collector's CPU per turn by generation, and its share of the worker's CPU (inside the stages' time)."""
    return {"gc_cpu_us_per_turn": {g: round(s / turns * 1e6, 1) for g, s in sorted(gc_s.items())},
            "gc_share": round(sum(gc_s.values()) / max(cpu_s, 1e-9), 3)}  # fmt: skip
