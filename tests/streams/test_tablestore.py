"""A state table on disk (streams/tablestore.py), driven as the commit's state stage drives it: a
write is read back at once, reaches the disk only with its acknowledged changelog offset, and a
worker that stops before then finds the state of before, from which recovery reads the changelog.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faust
import pytest

from engram.streams.commit import TableWrite, _write_states
from engram.streams.config import EngramConfig
from engram.streams.output import DeliveryError
from engram.streams.tables import DiskCommits, FaustTable, state_table
from engram.streams.tablestore import DiskTableStore


class Changelog:
    """A producer that acknowledges every record at its next offset, or fails the flush."""

    def __init__(self) -> None:
        self.sent: list[tuple[int, bytes, bytes | None, Callable[[int], None] | None]] = []
        self.ends: dict[int, int] = {}
        self.fail = False

    def send_to(
        self,
        topic: str,
        partition: int,
        key: bytes,
        value: bytes | None,
        on_offset: Callable[[int], None] | None = None,
    ) -> None:
        self.sent.append((partition, key, value, on_offset))

    async def flush(self) -> None:
        if self.fail:
            msg = "1 records undelivered"
            raise DeliveryError(msg)
        for partition, _, _, on_offset in self.sent:
            offset = self.ends.get(partition, 0)
            self.ends[partition] = offset + 1
            if on_offset is not None:
                on_offset(offset)
        self.sent.clear()


def open_table(
    folder: Path, changelog: Changelog, cache_keys: int = 10_000, name: str = "trace-state", **kwargs: Any
) -> tuple[FaustTable, DiskTableStore]:
    app = faust.App(f"tablestore-test-{name}", datadir=str(folder))
    faust_table = state_table(app, name, EngramConfig(partitions=2, state_cache_keys=cache_keys))
    store: Any = faust_table.data
    assert isinstance(store, DiskTableStore)
    return FaustTable(faust_table, changelog, **kwargs), store


def test_a_write_reaches_the_disk_with_its_acknowledged_offset_and_not_before(tmp_path: Path) -> None:
    changelog = Changelog()
    table, store = open_table(tmp_path, changelog)
    asyncio.run(
        _write_states([TableWrite(table, 1, "alice", {"turns": 1}), TableWrite(table, 0, "bob", {"t": 2})], None)
    )
    assert (store.disk.offset(1), store.disk.offset(0)) == (0, 0)

    changelog.fail = True
    table.write(1, "alice", {"turns": 2})
    table.write(1, "bob-2", {"t": 3})
    assert table["alice"] == {"turns": 2}  # read back at once, from what is staged
    with pytest.raises(DeliveryError):
        asyncio.run(table.flush())
    store.disk.close_all()  # the worker stops: what a restart finds on disk

    reopened, again = open_table(tmp_path, Changelog())
    # Recovery asks each assigned partition where its store is, and reads the changelog after it.
    assert [again.persisted_offset(faust.types.TP("t", p)) for p in (0, 1)] == [0, 0]
    assert dict(reopened) == {"alice": {"turns": 1}, "bob": {"t": 2}}
    again.disk.close_all()


def test_a_table_written_outside_a_state_stage_is_committed_at_the_next_flush_of_any(tmp_path: Path) -> None:
    changelog, commits = Changelog(), DiskCommits()
    slb, slb_store = open_table(tmp_path, changelog, name="slb-state", commits=commits)
    trace, _ = open_table(tmp_path, changelog, name="trace-state", commits=commits)
    slb.write(0, "epoch/alice", {"epoch": 3})  # the view's epochs are written as the view applies events

    asyncio.run(_write_states([TableWrite(trace, 0, "alice", {"turns": 1})], None))

    assert slb_store.staged == []
    assert slb_store.disk.get(0, slb_store._encode_key("epoch/alice")) is not None
    assert slb_store.disk.offset(0) == 0


def test_only_the_cache_stays_in_ram_and_reads_go_to_disk_past_it(tmp_path: Path) -> None:
    table, store = open_table(tmp_path, Changelog(), cache_keys=2)
    writes = [TableWrite(table, i % 2, f"user-{i}", {"n": i}) for i in range(6)]
    writes.append(TableWrite(table, 1, "user-5", None))
    asyncio.run(_write_states(writes, None))

    assert len(store.hot) <= 2
    assert {key: table[key] for key in sorted(table)} == {f"user-{i}": {"n": i} for i in range(5)}
    assert store.disk_reads >= 3
    assert "user-5" not in table
    store.disk.close_all()


def test_recovery_writes_the_changelog_with_its_offsets(tmp_path: Path) -> None:
    _, store = open_table(tmp_path, Changelog())
    records = [("alice", {"turns": 1}, 10), ("bob", {"turns": 1}, 11), ("alice", None, 12)]
    events = [_changelog_event(store, 1, key, value, offset) for key, value, offset in records]

    store.apply_changelog_batch(events, lambda k: k, lambda v: v)

    assert store.persisted_offset(faust.types.TP("t", 1)) == 12
    assert store.get_state("bob") == {"turns": 1}
    assert store.get_state("alice") is None
    store.disk.close_all()


def _changelog_event(store: DiskTableStore, partition: int, key: str, value: Any, offset: int) -> Any:
    message = faust.types.Message(
        topic="t", partition=partition, offset=offset, timestamp=0.0, timestamp_type=0, headers=[],
        key=store._encode_key(key), value=None if value is None else store._encode_value(value),
        checksum=None,
    )  # fmt: skip
    return type("Event", (), {"message": message})()
