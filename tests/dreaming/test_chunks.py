"""Ids a dream memory keeps in chunks by arrival (processors/dreaming/chunks.py): echoes, concepts."""

from __future__ import annotations

import pytest

from engram.processors.dreaming import chunks
from engram.processors.dreaming.chunks import IdChunks


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chunks, "ECHO_CHUNK", 3)


def test_ids_fill_chunks_in_arrival_order_and_only_changed_chunks_are_written() -> None:
    ids = IdChunks.in_order(f"e{i}" for i in range(7))
    assert list(ids) == [f"e{i}" for i in range(7)] and len(ids) == 7 and "e6" in ids
    kept, gone = ids.written()
    assert kept == {0: ["e0", "e1", "e2"], 1: ["e3", "e4", "e5"], 2: ["e6"]} and gone == []
    ids.discard("e4")
    ids.add("e7")
    ids.add("e7")  # already held: nothing changes
    assert ids.written() == ({1: ["e3", "e5"], 2: ["e6", "e7"]}, [])
    for i in (0, 1, 2):
        ids.discard(f"e{i}")
    ids.discard("unknown")
    assert ids.written() == ({}, [0])  # emptied: deleted, not written
    assert list(ids) == ["e3", "e5", "e6", "e7"] and ids.written() == ({}, [])


def test_the_window_keeps_whole_chunks_holding_at_least_what_it_keeps() -> None:
    ids = IdChunks()
    for i in range(10):
        ids.add(f"e{i}")
        ids.keep_last(4)
        assert len(ids) >= min(i + 1, 4) and f"e{i}" in ids
    assert list(ids) == ["e6", "e7", "e8", "e9"]  # chunks 2 (e6-e8) and 3 (e9); chunk 1 let go whole
    kept, gone = ids.written()
    assert gone == [0, 1] and sorted(kept) == [2, 3]


def test_chunks_read_back_as_written_go_on_where_they_stopped() -> None:
    ids = IdChunks.in_order(["a", "b", "c", "d"])
    ids.discard("b")
    kept, _ = ids.written()
    again = IdChunks.of(kept, ids.arrivals)
    assert list(again) == ["a", "c", "d"] and not again.dirty
    again.add("e")
    assert again.written() == ({1: ["d", "e"]}, [])
