"""Freed memory goes back to the OS (streams/trim.py): glibc's malloc_trim, counted; nothing where
the C library has none."""

from __future__ import annotations

from engram.streams.trim import Trimmer, libc_trim


def test_the_trimmer_calls_glibc_and_counts_its_time() -> None:
    assert libc_trim() is not None, "this machine's C library is glibc"
    trimmer = Trimmer()
    blocks = [bytearray(200_000) for _ in range(200)]  # freed in the middle of the heap
    del blocks[::2]
    took = trimmer()
    assert trimmer.calls == 1
    assert trimmer.seconds == took >= 0.0


def test_without_malloc_trim_it_does_nothing() -> None:
    trimmer = Trimmer(trim=None)
    assert trimmer() == 0.0
    assert trimmer.calls == 0
