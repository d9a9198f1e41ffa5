"""Double-buffered parts (processors/parts.py): a table folded from any run of writes holds every
part the head names, whole, and a second copy only of a part that is still changing."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.parts import flip, part_key

PARTS = ["c0", "c1", "c2", "s0"]


def write(table: dict[str, Any], slots: dict[str, int], stale: set[str], changed: dict[str, Any]) -> list[str]:
    """One write folded into ``table``, as the commit applies it (parts, head, deletes); the deleted keys."""
    writes, deletes = flip("ada", changed, slots, stale)
    for key, record in writes:
        table[key] = record
    table["ada"] = {"parts": dict(slots), "stale": sorted(stale)}
    for key in deletes:
        del table[key]  # a delete names a key the table holds
    return deletes


def test_a_part_written_on_every_batch_costs_no_delete_until_it_stops_changing() -> None:
    table: dict[str, Any] = {}
    slots: dict[str, int] = {}
    stale: set[str] = set()
    assert write(table, slots, stale, {"c0": {"n": 0}}) == []
    for n in range(1, 5):  # the newest chunk, rewritten batch after batch: its older copy is overwritten
        assert write(table, slots, stale, {"c0": {"n": n}}) == []
    assert stale == {"c0"} and table[part_key("ada", "c0", slots["c0"])] == {"n": 4}
    assert write(table, slots, stale, {"c1": {"n": 0}}) == [part_key("ada", "c0", 1 - slots["c0"])]
    assert stale == set() and {k for k in table if k != "ada"} == {part_key("ada", "c0", slots["c0"]),
                                                                   part_key("ada", "c1", 0)}  # fmt: skip


@given(st.lists(st.sets(st.sampled_from(PARTS)), min_size=1, max_size=30))
@settings(max_examples=200, deadline=None)
def test_any_run_of_writes_leaves_each_named_part_whole_and_a_second_copy_only_of_a_stale_one(
    batches: list[set[str]],
) -> None:
    table: dict[str, Any] = {}
    slots: dict[str, int] = {}
    stale: set[str] = set()
    latest: dict[str, Any] = {}
    for n, changed in enumerate(batches):
        records = {part: {"batch": n} for part in sorted(changed)}
        existed = set(slots)
        latest |= records
        write(table, slots, stale, records)
        assert stale == changed & existed  # rewritten now: an older copy kept; unchanged now: its copy deleted
        for part, slot in slots.items():  # the head names each part's newest record
            assert table[part_key("ada", part, slot)] == latest[part]
        held = {k for k in table if k != "ada"}
        second = {part_key("ada", part, 1 - slots[part]) for part in stale}
        assert held == {part_key("ada", part, slot) for part, slot in slots.items()} | second
