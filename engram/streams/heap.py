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
"""

from __future__ import annotations

import gc
from dataclasses import dataclass
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
        gc.freeze()
        self.frozen_at = nodes
        self.freezes += 1
        return True
