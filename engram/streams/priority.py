"""Reads first: a worker's write steps wait while context requests wait.

A worker answers context requests and ingests on one interpreter. Its CPU-heavy write steps (the
Trace, the facts step, dreaming: `KeyedSteps`, each batch one call off the loop) hold the GIL in
turns with the compile thread, so while a batch runs a compile takes about twice its time, and
while batches come back to back the requests queue behind them.

A user waits on a request; nobody waits on a turn's derived memory in the same way: the turn is
durable on the broker (and in the log once ingested), and what it derives lands later. So a write
step's batch first waits its turn: while requests are received and not yet answered, it waits
until they are, at most ``max_wait_s`` (``ENGRAM_READ_PRIORITY_MS``; 0 turns it off), so that
writes are slowed, never stopped. Requests still share the GIL with a batch already running; none
starts while they wait.

What it does not do: make room for a load the worker cannot carry whole. A delayed batch takes in
what came meanwhile and runs that much longer, so the write steps keep their share of the CPU; and
most of a turn's cost is not in them (`engram bench ingest`: trace, facts and dreams are about
1.3 ms of the worker's 5.2 ms of CPU a turn; decoding, the sinks, the view and the commit the
rest). Measured with ``engram bench compile --scenario many_users`` (its mixed step, with the
view's chunked application, streams/agents/compile.py), one run each, the same machine and hour:
at 20 requests/s beside 100 turns/s the requests waited p50 174 ms and p99 1.6 s (without: 278 ms
and 3.5 s); at 100 requests/s beside 100 turns/s, more than the worker's CPU, the p50 spread over
4.8-11.6 s with it and 7.2-11.6 s without. A bound that also kept the write steps to a quarter of
the time while requests kept waiting did not change the latter.

Counted in ``engram_write_yield_seconds_total``.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from dataclasses import dataclass, field

from engram.streams.metrics import EngramMetrics


@dataclass
class ReadPriority:
    """Requests received and not yet answered (on the loop), and the write steps' wait for them.

    ``max_wait_s``: the longest a write batch waits for the requests (0: writes never wait)."""

    max_wait_s: float
    metrics: EngramMetrics | None = None
    waiting: int = 0
    _answered: asyncio.Event | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if self.max_wait_s < 0:
            msg = f"a write step's wait for requests must be 0 (never) or more seconds, got {self.max_wait_s}"
            raise ValueError(msg)

    def arrived(self, requests: int) -> None:
        """``requests`` more were received (on the loop)."""
        if requests > 0:
            self.waiting += requests
            self._event().clear()

    def answered(self, requests: int) -> None:
        """``requests`` of them were answered (on the loop)."""
        self.waiting = max(0, self.waiting - requests)
        if self.waiting == 0:
            self._event().set()

    async def writes_turn(self) -> float:
        """Return once no request waits, or after ``max_wait_s``; the seconds waited."""
        if self.waiting == 0 or self.max_wait_s == 0:
            return 0.0
        started = time.monotonic()
        with contextlib.suppress(TimeoutError):  # waited long enough: the writes go on
            await asyncio.wait_for(self._event().wait(), self.max_wait_s)
        waited = time.monotonic() - started
        if self.metrics is not None:
            self.metrics.write_yield_seconds.inc(waited)
        return waited

    def _event(self) -> asyncio.Event:
        if self._answered is None:
            self._answered = asyncio.Event()
            if self.waiting == 0:
                self._answered.set()
        return self._answered
