"""A paused input partition stays paused when its stream's buffer drains (streams/flow.py), on a
real (unstarted) Faust consumer; Faust's own callback makes it active again."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import faust
import pytest
from faust.transport.consumer import Consumer
from faust.types import TP

from engram.streams.flow import keep_paused_on_buffer_drop

TURNS = TP("engram.turns", 0)
OTHER = TP("engram.turns", 1)


@pytest.fixture(autouse=True)
def collected() -> Iterator[None]:
    """Collect the test's app here: collected later, inside another test's `ast.parse`, its
    finalizers trip CPython 3.11's "AST constructor recursion depth mismatch" check."""
    yield
    gc.collect()


def consumer() -> Consumer:
    app = faust.App("flow-test", broker="kafka://127.0.0.1:1")
    found = app.consumer
    assert isinstance(found, Consumer)
    found._active_partitions = {TURNS, OTHER}  # noqa: SLF001 - as an assignment would set them
    return found


def drain_after_pause(c: Consumer) -> set[TP]:
    c.on_buffer_full(TURNS)  # the stream's buffer filled: the partition is not fetched
    c.pause_partitions({TURNS})  # backpressure
    c.on_buffer_drop(TURNS)  # the buffer drained to half
    c.on_buffer_full(OTHER)
    c.on_buffer_drop(OTHER)
    return set(c._get_active_partitions())  # noqa: SLF001


def test_a_drained_buffer_does_not_resume_a_paused_partition() -> None:
    c = consumer()
    keep_paused_on_buffer_drop(c)
    assert drain_after_pause(c) == {OTHER}, "the paused partition is fetched again"
    c.resume_partitions({TURNS})
    assert c._get_active_partitions() == {TURNS, OTHER}  # noqa: SLF001


def test_without_the_fix_faust_resumes_it() -> None:
    assert drain_after_pause(consumer()) == {TURNS, OTHER}  # what streams/flow.py fixes
