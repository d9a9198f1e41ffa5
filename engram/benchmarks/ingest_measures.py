"""What `engram bench ingest` derives from the worker's CPU, metrics and memory samples: the CPU
budget by stage and by thread, the garbage collector's part, turns/s of the first and last fifth,
and CPU and RSS by fifth of the history processed."""

from __future__ import annotations

from collections.abc import Sequence
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


# (memory events every sink applied, RSS MB, anonymous MB, CPU seconds, of which the collector's,
# the broker's CPU seconds, wall seconds)
WorkerSample = tuple[float, float, float, float, float, float, float]


def rss_by_fifth(rss: Sequence[tuple[float, ...]], applied: tuple[float, float], warmed: float) -> dict[str, Any]:
    """The worker's RSS (MB) after the warm-up, the most it held while each fifth of the history
    was processed, and its peak; ``anon_by_fifth`` the same for its anonymous memory (without the
    files it maps). A fifth is one of the memory events every sink applied, from ``applied[0]`` to
    ``applied[1]``: the end of the pipeline, as ``late_vs_early``, since the turns admitted run
    ahead of it by up to the backlog bound. Flat fifths are memory that does not grow with history."""
    base, total = applied[0], max(applied[1] - applied[0], 1.0)

    def fifth(column: int) -> list[float]:
        return [round(max((s[column] for s in rss if k / 5 < (s[0] - base) / total <= (k + 1) / 5), default=0.0), 1)
                for k in range(5)]  # fmt: skip

    return {"after_warm_up": round(warmed, 1), "by_fifth": fifth(1), "anon_by_fifth": fifth(2),
            "peak": round(max(s[1] for s in rss), 1)}  # fmt: skip


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
    took; the broker's CPU µs per turn; and ``worker_busy_by_fifth``, the worker's CPU seconds per
    second of the fifth: near 1, it computed all along (one Python thread); well under it, it waited
    (on the broker, the disk, the backlog). A fifth's CPU includes the work on the turns admitted
    ahead of it (up to the backlog bound)."""
    base, total = applied[0], max(applied[1] - applied[0], 1.0)
    marks = [next(s for s in samples if s[0] - base >= k / 5 * total) for k in range(6)]
    spans = list(zip(marks, marks[1:], strict=False))

    def per_turn(column: int) -> list[float]:
        return [round((b[column] - a[column]) / (turns / 5) * 1e6, 1) for a, b in spans]

    return {"cpu_us_per_turn_by_fifth": per_turn(3),
            "gc_share_by_fifth": [round((b[4] - a[4]) / max(b[3] - a[3], 1e-9), 3) for a, b in spans],
            "broker_cpu_us_per_turn_by_fifth": per_turn(5),
            "worker_busy_by_fifth": [round((b[3] - a[3]) / max(b[6] - a[6], 1e-9), 2) for a, b in spans]}  # fmt: skip


def gc_budget(cpu_s: float, gc_s: dict[str, float], turns: int) -> dict[str, Any]:
    """The collector's CPU per turn by generation, and its share of the worker's CPU (inside the stages' time)."""
    return {"gc_cpu_us_per_turn": {g: round(s / turns * 1e6, 1) for g, s in sorted(gc_s.items())},
            "gc_share": round(sum(gc_s.values()) / max(cpu_s, 1e-9), 3)}  # fmt: skip
