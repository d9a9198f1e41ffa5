"""Gap bookkeeping (processors/intake_offsets.py), without servers."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from engram.processors.intake_offsets import OffsetGap, OffsetTracker, splice

T, U = "engram.memory", "engram.turns"


def test_first_sight_is_an_open_gap_then_contiguous_offsets_are_none() -> None:
    tracker = OffsetTracker()
    assert tracker.observe(T, 0, 5) == OffsetGap(T, 0, None, 5)
    assert [tracker.observe(T, 0, o) for o in (6, 7, 8)] == [None, None, None]
    assert tracker.expected(T, 0) == 9


def test_a_skip_is_the_missing_range() -> None:
    tracker = OffsetTracker()
    tracker.observe(T, 1, 0)
    tracker.observe(T, 1, 1)
    gap = tracker.observe(T, 1, 9)
    assert gap == OffsetGap(T, 1, 2, 9)
    assert gap is not None and gap.size == 7
    assert tracker.expected(T, 1) == 10


def test_redeliveries_never_move_the_expectation_back() -> None:
    tracker = OffsetTracker()
    for offset in range(10):
        tracker.observe(T, 0, offset)
    # A rebalance replays 3..9 and the replay skips 5: all of it was delivered before.
    assert [tracker.observe(T, 0, o) for o in (3, 4, 6, 7)] == [None, None, None, None]
    assert tracker.expected(T, 0) == 10
    assert tracker.observe(T, 0, 10) is None


def test_partitions_and_topics_are_tracked_apart() -> None:
    tracker = OffsetTracker()
    found = tracker.scan([(T, 0, 0), (T, 1, 0), (U, 0, 0), (T, 0, 1), (T, 1, 3), (U, 0, 1)])
    assert [(i, g.start) for i, g in found] == [(0, None), (1, None), (2, None), (4, 1)]
    assert found[3][1] == OffsetGap(T, 1, 1, 3)


def test_forget_starts_a_partition_over() -> None:
    tracker = OffsetTracker()
    tracker.observe(T, 0, 0)
    tracker.forget(T, 0)
    assert tracker.observe(T, 0, 50) == OffsetGap(T, 0, None, 50)


def test_clipping_to_where_the_group_resumed() -> None:
    first_sight = OffsetGap(T, 0, None, 8)
    assert first_sight.clipped(8) is None, "resumed exactly at the first record: nothing missing"
    assert first_sight.clipped(5) == OffsetGap(T, 0, 5, 8)
    skipped = OffsetGap(T, 0, 10, 20)
    assert skipped.clipped(3) == skipped, "a commit below the gap keeps all of it"
    assert skipped.clipped(14) == OffsetGap(T, 0, 14, 20)
    assert skipped.clipped(20) is None, "another worker processed it (a rebalance, not a skip)"


def test_splice_puts_repaired_records_before_the_one_that_revealed_them() -> None:
    assert splice(["a", "e", "f"], {1: ["b", "c", "d"]}) == list("abcdef")
    assert splice(["x"], {}) == ["x"]
    assert splice(["p", "q"], {0: ["o"], 1: []}) == ["o", "p", "q"]


@given(
    st.lists(st.integers(min_value=0, max_value=60), min_size=1, max_size=80),
    st.integers(min_value=0, max_value=5),
)
def test_delivered_plus_gaps_cover_every_offset_from_the_resume_point(delivered: list[int], resumed: int) -> None:
    """Whatever the consumer got (skips, replays, any order), the offsets it saw plus the gaps
    reported (clipped at the resume point) cover every offset from there to the highest seen."""
    tracker = OffsetTracker()
    covered = set(delivered)
    for _, gap in tracker.scan((T, 0, o) for o in delivered):
        clipped = gap.clipped(resumed)
        if clipped is not None and clipped.start is not None:
            assert clipped.size > 0
            covered.update(range(clipped.start, clipped.end))
    assert set(range(resumed, max(delivered) + 1)) <= covered
