"""The view's per-partition watermark: each memory offset applied at most once, in order."""

from __future__ import annotations

from typing import TypeVar

from hypothesis import given
from hypothesis import strategies as st

from engram.processors.retrieval.applied import AppliedOffsets
from engram.schemas.record import Record

T = TypeVar("T")


def at(*rows: tuple[int, int, T]) -> list[Record[T]]:
    """Records of topic "m" from ``(partition, offset, value)`` rows."""
    return [Record("m", partition, offset, 0, None, value) for partition, offset, value in rows]


def test_an_offset_is_fresh_once_and_only_above_the_watermark() -> None:
    applied = AppliedOffsets()
    assert applied.next_offset(0) is None and applied.snapshot() == {}
    assert [applied.fresh(0, o) for o in (0, 1, 1, 0, 2)] == [True, True, False, False, True]
    assert applied.snapshot() == {0: 2} and applied.next_offset(0) == 3


def test_partitions_have_their_own_watermarks() -> None:
    applied = AppliedOffsets()
    assert applied.fresh(0, 10) and applied.fresh(1, 3)
    assert not applied.fresh(0, 3) and applied.fresh(1, 4)
    assert applied.snapshot() == {0: 10, 1: 4}


def test_a_jump_over_undecodable_offsets_is_admitted() -> None:
    applied = AppliedOffsets({0: 4})
    assert applied.fresh(0, 7) and applied.next_offset(0) == 8
    assert not applied.fresh(0, 5), "offsets the watermark jumped over are never applied late"


def test_a_lower_offset_never_lowers_a_watermark() -> None:
    applied = AppliedOffsets()
    assert applied.fresh(2, 9) and not applied.fresh(2, 4)
    assert applied.next_offset(2) == 10
    assert not applied.fresh(2, 9) and applied.fresh(2, 10)


def test_admit_keeps_the_fresh_records_in_the_given_order() -> None:
    applied = AppliedOffsets({1: 5})
    records = at((0, 0, "a"), (1, 5, "old"), (1, 6, "b"), (0, 1, "c"), (0, 1, "dup"), (1, 7, "d"))
    assert applied.admit(records) == ["a", "b", "c", "d"]
    assert applied.admit(records) == [], "a second delivery of the same offsets applies nothing"


@given(
    st.lists(
        st.lists(st.tuples(st.integers(0, 2), st.integers(0, 30)), max_size=20).map(
            lambda pairs: sorted(set(pairs))  # one path: contiguous-or-jumping, increasing per partition
        ),
        min_size=1,
        max_size=3,
    )
)
def test_any_interleaving_of_paths_applies_each_offset_at_most_once_in_increasing_order(
    paths: list[list[tuple[int, int]]],
) -> None:
    applied = AppliedOffsets()
    admitted: list[tuple[int, int]] = []
    cursors = [0] * len(paths)
    # Round-robin over the paths, one record each: overlapping deliveries of the same partitions.
    while any(c < len(p) for c, p in zip(cursors, paths, strict=True)):
        for i, path in enumerate(paths):
            if cursors[i] < len(path):
                partition, offset = path[cursors[i]]
                cursors[i] += 1
                admitted += applied.admit(at((partition, offset, (partition, offset))))
    for partition in range(3):
        offsets = [o for p, o in admitted if p == partition]
        assert offsets == sorted(set(offsets)), "each offset once, increasing"
        delivered = [o for path in paths for p, o in path if p == partition]
        assert (max(offsets) if offsets else None) == (max(delivered) if delivered else None)


def test_a_batch_past_the_watermark_names_the_offsets_the_view_is_behind_on() -> None:
    applied = AppliedOffsets({0: 4, 1: 9})
    batch = at((0, 8, "a"), (0, 9, "b"), (1, 10, "c"), (2, 30, "d"))
    # Partition 0 resumes at 8 with 5..7 never applied; 1 is contiguous; 2 was never applied at all.
    assert applied.behind(batch) == {0: (5, 8)}
    assert applied.behind(at((1, 9, "old"))) == {}, "a batch the view already holds is not behind"
    assert applied.behind([]) == {}
    # A reader that must hold whole partitions is behind a partition it never applied, from 0.
    assert applied.behind(batch, from_start=True) == {0: (5, 8), 2: (0, 30)}
    assert applied.behind(at((3, 0, "first")), from_start=True) == {}, "nothing before offset 0"
