"""Giving the memory the worker freed back to the operating system (glibc's ``malloc_trim``).

glibc's allocator keeps freed memory in the arena it came from, and each thread that allocates
gets an arena of its own: the commit's worker threads (the sinks' flushes, the state stores'
writes, streams/tablestore.py), RocksDB's and librdkafka's threads. Freed pages in the middle of
an arena are not returned until something asks for it. Measured with `engram bench ingest --turns
20000 --users 1000` (same machine, one run each): with the tables on disk the worker ended at 997
MB of anonymous RSS, 9 thread arenas holding 317 MB of it against 186 MB with Faust's RAM store
(787 MB in all); with a ``malloc_trim(0)`` every 10 s it ended at 781 MB. Dask's workers do the
same for the same reason (its documentation: "Memory not released back to the OS").

`Trimmer` calls it every ``ENGRAM_MALLOC_TRIM_INTERVAL_S`` seconds off the event loop (glibc
locks each arena in turn, so the other threads go on), and counts the seconds it takes
(``engram_malloc_trim_seconds_total``). On a C library without it (musl, macOS) it does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import time
from collections.abc import Callable
from dataclasses import dataclass, field


def libc_trim() -> Callable[[int], int] | None:
    """glibc's ``malloc_trim``, or None where the C library has none."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    trim: Callable[[int], int] | None = getattr(ctypes.CDLL(name), "malloc_trim", None)
    return trim


@dataclass
class Trimmer:
    """Returns freed heap pages to the OS when called (on a worker thread: it takes milliseconds)."""

    trim: Callable[[int], int] | None = field(default_factory=libc_trim)
    seconds: float = 0.0
    calls: int = 0

    def __call__(self) -> float:
        """Trim once; the seconds it took."""
        if self.trim is None:
            return 0.0
        started = time.perf_counter()
        self.trim(0)
        took = time.perf_counter() - started
        self.seconds += took
        self.calls += 1
        return took
