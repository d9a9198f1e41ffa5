"""The garbage collector's CPU and collections, counted per generation (streams/heap.py) and
exposed on /metrics (``engram_gc_cpu_seconds_total``, ``engram_gc_collections_total``)."""

from __future__ import annotations

import gc
import re
import time
from collections.abc import Iterator

import pytest

from engram.streams.heap import GcClock, freeze_heap, unfreeze_heap
from engram.streams.metrics import EngramMetrics


@pytest.fixture
def collector_off() -> Iterator[None]:
    """Only the collections the test asks for (none triggered by its allocations)."""
    gc.disable()
    yield
    gc.enable()
    unfreeze_heap()


def scraped(metrics: EngramMetrics, name: str, generation: int) -> float:
    text = metrics.exposition().decode()
    found = re.search(rf'^{name}\{{generation="{generation}"\}} (\S+)$', text, re.M)
    assert found is not None, f"{name} generation {generation} is not exposed"
    return float(found.group(1))


def test_a_collection_is_timed_on_its_thread_by_generation() -> None:
    clock = GcClock()
    clock.on_collection("start", {"generation": 1})
    spent = time.thread_time() + 0.02
    while time.thread_time() < spent:  # the collection's CPU, on this thread
        pass
    clock.on_collection("stop", {"generation": 1, "collected": 0, "uncollectable": 0})
    assert clock.collections == [0, 1, 0]
    assert clock.seconds[0] == clock.seconds[2] == 0.0
    assert 0.02 <= clock.seconds[1] < 1.0


@pytest.mark.usefixtures("collector_off")
def test_the_worker_metrics_count_each_full_collection_and_its_cpu_from_their_creation_on() -> None:
    gc.collect()  # before the metrics exist: not theirs
    metrics = EngramMetrics()
    assert scraped(metrics, "engram_gc_collections_total", 2) == 0
    garbage: list[list[object]] = [[i] for i in range(200_000)]
    for item in garbage:
        item.append(item)  # reference cycles: only the collector frees them
    del garbage
    started = time.thread_time()
    for _ in range(3):
        gc.collect()
    spent = time.thread_time() - started
    assert scraped(metrics, "engram_gc_collections_total", 2) == 3
    assert scraped(metrics, "engram_gc_collections_total", 0) == 0
    assert 0.5 * spent <= scraped(metrics, "engram_gc_cpu_seconds_total", 2) <= spent


@pytest.mark.usefixtures("collector_off")
def test_the_frozen_objects_gauge_follows_the_heaps_freezes() -> None:
    unfreeze_heap()
    metrics = EngramMetrics()
    assert frozen_objects(metrics) == 0
    kept = [[i] for i in range(1000)]
    frozen = freeze_heap()
    assert frozen >= len(kept)
    assert frozen_objects(metrics) == frozen
    unfreeze_heap()
    assert frozen_objects(metrics) == 0


@pytest.mark.usefixtures("collector_off")
def test_a_scrape_does_not_walk_the_frozen_heap(monkeypatch: pytest.MonkeyPatch) -> None:
    """``gc.get_freeze_count`` walks every frozen object: a worker scraped twice a second spent 14%
    of its CPU there. The count is taken once a freeze; a scrape reads it."""
    metrics = EngramMetrics()
    kept = [[i] for i in range(1000)]
    frozen = freeze_heap()

    def walked() -> int:
        msg = "a scrape counted the frozen objects again"
        raise AssertionError(msg)

    monkeypatch.setattr(gc, "get_freeze_count", walked)
    assert frozen_objects(metrics) == frozen >= len(kept)


def frozen_objects(metrics: EngramMetrics) -> float:
    found = re.search(r"^engram_gc_frozen_objects (\S+)$", metrics.exposition().decode(), re.M)
    assert found is not None, "engram_gc_frozen_objects is not exposed"
    return float(found.group(1))
