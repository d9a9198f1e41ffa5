"""A token bucket: at most ``rate`` acquisitions per second on average, bursts up to ``burst``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Final

_EPSILON: Final = 1e-9


class TokenBucket:
    """Blocking rate limiter. ``clock`` is monotonic seconds; both it and ``sleep`` are injectable
    so that tests run in virtual time. The bucket starts full."""

    def __init__(
        self,
        rate_per_s: float,
        burst: float | None = None,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if rate_per_s <= 0:
            msg = f"rate must be positive, got {rate_per_s}"
            raise ValueError(msg)
        self.rate = rate_per_s
        # Default burst: a tenth of a second's worth, at least one token, so that a high rate is
        # smooth without sleeping per message.
        self.burst = burst if burst is not None else max(1.0, rate_per_s / 10)
        if self.burst < 1:
            msg = f"burst must be at least 1, got {self.burst}"
            raise ValueError(msg)
        self._clock = clock
        self._sleep = sleep
        self._tokens = self.burst
        self._last = clock()

    def _refill(self) -> None:
        now = self._clock()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.rate)
        self._last = now

    def try_acquire(self, tokens: float = 1.0) -> bool:
        self._refill()
        # The tolerance absorbs float rounding of (elapsed * rate): waiting exactly the computed
        # deficit must be enough, or a virtual clock would spin on ever smaller sleeps.
        if self._tokens + _EPSILON >= tokens:
            self._tokens -= tokens
            return True
        return False

    def acquire(self, tokens: float = 1.0) -> float:
        """Take ``tokens``, sleeping until they are available; returns the seconds slept."""
        if tokens > self.burst:
            msg = f"cannot take {tokens} tokens at once from a bucket of {self.burst}"
            raise ValueError(msg)
        slept = 0.0
        while not self.try_acquire(tokens):
            wait = (tokens - self._tokens) / self.rate
            self._sleep(wait)
            slept += wait
        return slept
