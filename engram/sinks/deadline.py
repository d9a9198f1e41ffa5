"""Blocking I/O of the compile path on one dedicated executor, waited for within the request's budget.

The compile runs on a thread of its own, off the event loop (streams/agents/compile.py). A store
that answers in 2 s would still hold that thread, and every request queued behind it, for 2 s. So
each blocking call of a compile (the Cypher expansion, the LLM router's chat call, an HTTP
embedding) runs on a pool thread here, and the compile waits at most what is left of its request's
deadline (times the caller's ``share``, which leaves the in-process fallback time to run).

Invariants:
- A call that overruns its wait is abandoned, never waited for again: the compile goes on with its
  fallback (`DeadlineExceededError` names the caller and how long it waited, in ms), the call ends
  on its pool thread (or at its client's own socket timeout) and its result is dropped. A call that
  had not started yet is cancelled.
- Each caller (``name``) has at most ``max_running`` calls running at once. Past that, a call fails
  at once instead of queueing behind a store that is not answering, so a dead or stalled store costs
  a request nothing and holds at most ``max_running`` pool threads. With one compile thread, a
  caller's second running call is always an abandoned one.
- The deadline is per calling thread: `within(budget_s)` sets it (monotonic clock, seconds) for the
  calls made inside; outside any, a call waits at most ``default_timeout_s``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeoutError
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


class DeadlineExceededError(RuntimeError):
    """A blocking call did not answer within its share of the request's budget, or its caller still
    has ``max_running`` calls running (``busy``)."""

    def __init__(self, name: str, waited_ms: float, *, busy: bool = False) -> None:
        self.name = name
        self.waited_ms = waited_ms
        self.busy = busy
        if busy:
            super().__init__(f"{name} busy: earlier calls still running")
        else:
            super().__init__(f"{name} timed out after {waited_ms:.0f} ms")


@dataclass(frozen=True, slots=True)
class BlockingCallsConfig:
    """``workers``: pool threads (enough for every caller's ``max_running``); ``max_running``: calls
    of one caller running at once; ``default_timeout_s``: the wait outside any `within`."""

    workers: int = 4
    max_running: int = 1
    default_timeout_s: float = 2.0

    def __post_init__(self) -> None:
        if self.workers < 1 or self.max_running < 1 or self.default_timeout_s <= 0:
            msg = f"blocking calls need workers, max_running >= 1 and a positive default timeout, got {self}"
            raise ValueError(msg)


class BlockingCalls:
    """The compile path's executor for blocking I/O (see the module docstring). Thread-safe."""

    def __init__(
        self, config: BlockingCallsConfig | None = None, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.config = config or BlockingCallsConfig()
        self.clock = clock
        self._executor: ThreadPoolExecutor | None = None
        self._running: dict[str, int] = {}
        self._lock = threading.Lock()
        self._local = threading.local()

    @contextmanager
    def within(self, budget_s: float) -> Iterator[None]:
        """Calls this thread makes inside wait at most until ``budget_s`` from now."""
        outer: float | None = getattr(self._local, "deadline", None)
        self._local.deadline = self.clock() + budget_s
        try:
            yield
        finally:
            self._local.deadline = outer

    def remaining_s(self) -> float:
        """Seconds left of this thread's deadline (``default_timeout_s`` outside any `within`)."""
        deadline: float | None = getattr(self._local, "deadline", None)
        if deadline is None:
            return self.config.default_timeout_s
        return max(0.0, deadline - self.clock())

    def call(self, name: str, fn: Callable[[], T], *, share: float = 1.0) -> T:
        """``fn()`` on a pool thread, waited for at most ``share`` of the remaining deadline.
        Its own exceptions propagate; `DeadlineExceededError` when it is late or ``name`` is busy."""
        wait_s = self.remaining_s() * share
        if wait_s <= 0:
            raise DeadlineExceededError(name, 0.0)
        with self._lock:
            if self._running.get(name, 0) >= self.config.max_running:
                raise DeadlineExceededError(name, 0.0, busy=True)
            self._running[name] = self._running.get(name, 0) + 1
            if self._executor is None:
                self._executor = ThreadPoolExecutor(self.config.workers, thread_name_prefix="engram-blocking-io")
            executor = self._executor

        def run() -> T:
            try:
                return fn()
            finally:  # before the future is resolved: the next call of `name` sees it ended
                self._ended(name)

        started = self.clock()
        future: Future[T] = executor.submit(run)
        try:
            return future.result(timeout=wait_s)
        except (FutureTimeoutError, CancelledError):
            if future.cancel():  # never started: `run` will not count it down
                self._ended(name)
            raise DeadlineExceededError(name, (self.clock() - started) * 1000.0) from None

    def running(self, name: str) -> int:
        """Calls of ``name`` running or queued now (abandoned ones included)."""
        with self._lock:
            return self._running.get(name, 0)

    def _ended(self, name: str) -> None:
        with self._lock:
            self._running[name] -= 1

    def close(self, *, wait: bool = True) -> None:
        """Cancel queued calls and stop the pool; ``wait`` joins calls still running."""
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)
