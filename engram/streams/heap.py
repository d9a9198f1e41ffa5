"""Keeping the worker's long-lived heap out of the cyclic garbage collector's full passes.

Measured here (``engram bench compile``, 100k nodes in the in-process MemoryView): a full
(generation 2) collection in the worker took 240-480 ms, and one that landed among the measured
requests stalled every request queued behind it (worker wait p99 190 ms, end-to-end p99 205 ms).
The view's records live as long as the worker, so scanning them again and again is wasted:
`gc.freeze()` moves everything alive into the permanent generation, which collections skip.

Reference counting still frees frozen objects that die; only reference cycles that are alive at a
freeze and dropped later are never collected. So freezes are rare: when the view has grown by
``growth`` (relative) and by at least ``min_nodes`` since the last one, which is a few dozen times
from empty to 100k nodes and seldom after.

`GcClock` measures what the collector costs the worker (``engram_gc_cpu_seconds_total`` by
generation, streams/metrics.py), so whether freezing pays, and whether it grows with the heap, is read
off /metrics and `engram bench ingest` rather than guessed.
"""

from __future__ import annotations

import gc
import time
from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class FreezePolicy:
    min_nodes: int = 10_000
    growth: float = 0.1

    def __post_init__(self) -> None:
        if self.min_nodes < 1 or self.growth <= 0:
            msg = f"a freeze needs min_nodes >= 1 and growth > 0, got {self.min_nodes}, {self.growth}"
            raise ValueError(msg)


FREEZE_DEFAULT: Final = FreezePolicy()


@dataclass
class HeapFreezer:
    """Freezes the process's heap when the memory view it watches has grown enough (on the loop)."""

    policy: FreezePolicy = FREEZE_DEFAULT
    frozen_at: int = 0  # view nodes at the last freeze
    freezes: int = 0

    def note_size(self, nodes: int) -> bool:
        """Tell the view's node count; freezes (and returns True) when it grew enough."""
        if nodes - self.frozen_at < max(self.policy.min_nodes, self.policy.growth * self.frozen_at):
            return False
        freeze_heap()
        self.frozen_at = nodes
        self.freezes += 1
        return True


GENERATIONS: Final = 3


@dataclass
class GcClock:
    """The CPU time the cyclic garbage collector takes, per generation, and its collections.

    Counted from ``gc.callbacks``: a collection runs on the thread whose allocation triggered it,
    holding the GIL, so its start and stop come on one thread, one collection at a time, and the
    thread's CPU time between them is the collection's. That time is inside whichever stage the
    thread was timing (`streams.metrics.cpu_of`): it says how much of the stages' CPU is the
    collector's, not an extra stage. The collector is one per process, so is this clock
    (`gc_clock`).
    """

    seconds: list[float] = field(default_factory=lambda: [0.0] * GENERATIONS)
    collections: list[int] = field(default_factory=lambda: [0] * GENERATIONS)
    frozen: int = 0  # objects in the permanent generation, counted at the last `freeze_heap`/`unfreeze_heap`
    _started: float = 0.0

    def on_collection(self, phase: str, info: dict[str, int]) -> None:
        """The ``gc.callbacks`` hook."""
        if phase == "start":
            self._started = time.thread_time()
            return
        generation = info["generation"]
        self.seconds[generation] += time.thread_time() - self._started
        self.collections[generation] += 1


_CLOCK: Final = GcClock()


def gc_clock() -> GcClock:
    """The process's `GcClock`, counting from the first call on."""
    if _CLOCK.on_collection not in gc.callbacks:
        gc.callbacks.append(_CLOCK.on_collection)
    return _CLOCK


def freeze_heap() -> int:
    """``gc.freeze()``, and the objects frozen now, kept on the process's `GcClock` for /metrics.

    Counted here, once a freeze, not on each scrape: ``gc.get_freeze_count()`` walks every frozen
    object (26 ms at 3 million here), and a worker's /metrics is read twice a second by the bench
    and every few seconds by Prometheus; per scrape, it took 14% of the worker's CPU at 30,000 turns
    and grew with the heap.
    """
    gc.freeze()
    _CLOCK.frozen = gc.get_freeze_count()
    return _CLOCK.frozen


def unfreeze_heap() -> None:
    """``gc.unfreeze()``: the frozen objects go back to the oldest generation."""
    gc.unfreeze()
    _CLOCK.frozen = 0
