"""The heap freezer freezes when the view grew enough, and only then."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest

from engram.streams.heap import FreezePolicy, HeapFreezer


@pytest.fixture
def unfrozen() -> Iterator[None]:
    gc.unfreeze()
    yield
    gc.unfreeze()  # leave the test process as it was


@pytest.mark.usefixtures("unfrozen")
def test_freezes_after_enough_growth_absolute_then_relative() -> None:
    freezer = HeapFreezer(FreezePolicy(min_nodes=100, growth=0.5))
    assert not freezer.note_size(99), "below min_nodes"
    assert gc.get_freeze_count() == 0
    alive = [[i] for i in range(50)]  # lists are tracked by the cyclic GC
    assert freezer.note_size(100)
    assert gc.get_freeze_count() >= len(alive), "what was alive is frozen"
    assert not freezer.note_size(199), "min_nodes more is needed"
    assert freezer.note_size(200)
    assert not freezer.note_size(299), "then 50% of the last size (100 nodes)"
    assert freezer.note_size(300)
    assert (freezer.freezes, freezer.frozen_at) == (3, 300)


def test_a_policy_that_would_freeze_on_every_call_is_refused() -> None:
    with pytest.raises(ValueError, match="min_nodes"):
        FreezePolicy(min_nodes=0)
    with pytest.raises(ValueError, match="growth"):
        FreezePolicy(growth=0.0)
