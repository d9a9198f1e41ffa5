"""Where one worker saturates (``engram bench compile``): ``max_answered_per_s``.

Rising rates are offered, each for ``--saturation-seconds`` of requests (the scenario's own mix:
same askers, questions and budget), each step's answers awaited before the next. The worker keeps
up with a step while answers per second over requests per second, each over its own span, stay at
least `KEEPING_UP`; the climb ends at the first step it does not keep up with.

- ``max_answered_per_s``: the answer rate of the last step before the first that either falls
  behind or has a p99 over `P99_LIMIT_MS` (the goal's figure), with its p50/p99; 0.0 when the
  first step already fails.
- ``max_kept_up_per_s``: the answer rate of the last step the worker kept up with, whatever its
  p99 (where throughput, not latency, runs out), with its p99.

Each step also says where the CPU went: ``cpu_ms_per_request``, the CPU time the worker, the broker
and the bench's own process (producing requests, reading and decoding answers) spent over the step,
per request answered, and ``broker_records_per_request``: the records the step added to the
worker's topics (requests, answers, memory events, table changelogs), per request answered. They
share the machine's cores, so a rate the three cannot afford together is one no latency tuning
reaches: ``cpu_bound_per_s`` is the rate at which their CPU per request fills every core.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Final

from engram.benchmarks.compile_measure import Measured, measure, percentile
from engram.schemas.records import ContextRequest
from engram.streams.config import EngramConfig

KEEPING_UP: Final = 0.99
P99_LIMIT_MS: Final = 50.0
RATES: Final = (100.0, 200.0, 300.0, 400.0, 600.0, 800.0, 1000.0, 1500.0, 2000.0)

Requests = Callable[[int, int], list[ContextRequest]]  # (count, first number) -> requests
CpuClock = Callable[[], dict[str, float]]  # process name -> its CPU seconds so far
RecordCount = Callable[[], int]  # records the broker holds on the worker's topics so far


def cpu_per_request(before: dict[str, float], after: dict[str, float], answered: int) -> dict[str, float]:
    """Each process's CPU over a step, in ms per request answered."""
    return {name: round((after[name] - before[name]) / max(1, answered) * 1000.0, 3) for name in after}


def step_summary(rate: float, m: Measured) -> dict[str, Any]:
    answered = len(m.compiled)
    return {
        "rate": rate,
        "requests": answered + m.missing,
        "missing": m.missing,
        "offered_per_s": round((answered + m.missing - 1) / m.sent_span_s, 1) if m.sent_span_s > 0 else 0.0,
        "answered_per_s": round((answered - 1) / m.received_span_s, 1) if m.received_span_s > 0 else 0.0,
        "keeping_up": round(m.keeping_up(), 4),
        "p50_ms": percentile(m.latencies_ms, 50),
        "p99_ms": percentile(m.latencies_ms, 99),
        "slb_hit_rate": round(sum(c["cache_hit"] for c in m.compiled) / max(1, answered), 3),
    }


def why_not(step: dict[str, Any]) -> str | None:
    """Why a step does not pass (None: it passes)."""
    return behind(step) or slow(step)


def behind(step: dict[str, Any]) -> str | None:
    if step["keeping_up"] < KEEPING_UP:
        return f"answered/offered {step['keeping_up']} < {KEEPING_UP} at {step['rate']}/s"
    return None


def slow(step: dict[str, Any]) -> str | None:
    if not step["p99_ms"] <= P99_LIMIT_MS:
        return f"p99 {step['p99_ms']} ms > {P99_LIMIT_MS} ms at {step['rate']}/s"
    return None


def saturate(
    config: EngramConfig, requests: Requests, start: int, rates: Sequence[float], seconds: float, cpu: CpuClock,
    records: RecordCount = lambda: 0,
) -> dict[str, Any]:  # fmt: skip
    """Offer ``rates`` in turn (requests numbered from ``start``) until the worker falls behind
    (module docstring)."""
    steps: list[dict[str, Any]] = []
    best: dict[str, Any] | None = None  # the last step of the unbroken run of passing ones
    kept: dict[str, Any] | None = None  # the last step the worker kept up with
    failed: str | None = None  # why the first step that did not pass did not
    stopped = "every rate offered was kept up with"
    for rate in rates:
        count = max(2, round(rate * seconds))
        before, held = cpu(), records()
        step = step_summary(rate, measure(config, [(requests(count, start), rate)])[0])
        answered = step["requests"] - step["missing"]
        step["cpu_ms_per_request"] = spent = cpu_per_request(before, cpu(), answered)
        step["cpu_bound_per_s"] = round((os.cpu_count() or 1) * 1000.0 / sum(spent.values()), 1) if spent else None
        step["broker_records_per_request"] = round((records() - held) / max(1, answered), 2)
        start += count
        steps.append(step)
        failed = failed or why_not(step)
        if failed is None:
            best = step
        reason = behind(step)
        if reason is not None:
            stopped = reason
            break
        kept = step
    return {
        "max_answered_per_s": best["answered_per_s"] if best else 0.0,
        "offered_per_s_at_max": best["offered_per_s"] if best else None,
        "p50_ms_at_max": best["p50_ms"] if best else None,
        "p99_ms_at_max": best["p99_ms"] if best else None,
        "max_ended_by": failed,
        "max_kept_up_per_s": kept["answered_per_s"] if kept else 0.0,
        "p99_ms_at_kept_up": kept["p99_ms"] if kept else None,
        "cpu_ms_per_request": (kept or steps[0])["cpu_ms_per_request"] if steps else None,
        "cpu_bound_per_s": (kept or steps[0])["cpu_bound_per_s"] if steps else None,
        "broker_records_per_request": (kept or steps[0])["broker_records_per_request"] if steps else None,
        "stopped_by": stopped,
        "rule": f"rising rates, {seconds:g} s each, while answered/offered >= {KEEPING_UP} "
        f"(max_answered_per_s: and p99 <= {P99_LIMIT_MS} ms)",
        "steps": steps,
    }
