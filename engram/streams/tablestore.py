"""A Faust table store on local disk: a restart recovers a table's changelog from where its store
left off, not from the start (issue 50, item 2).

Faust 0.15.3 keeps a table in RAM (``memory://``) and, at every start, reads its whole changelog
back; the stand-in broker never compacts, so that read grew with every state ever written
(measured: 4.2 s at 20,000 turns, 20 s at 100,000, `engram bench ingest --restart`). Faust's own
RocksDB store cannot take Engram's writes: its ``_set`` asserts a current event to find the key's
partition, and Engram's batch agents write many keys with none (streams/tables.py names the
partition of each write). `DiskTableStore` is that store written for explicit partitions, over
`sinks.statestore.PartitionStore`:

- **Reads** go to the writes not yet durable, then a cache of decoded values (least recently used
  first out, ``ENGRAM_STATE_CACHE_KEYS``), then RocksDB. The table's RAM is the cache, not its
  history.
- **Writes** are staged (`stage`) while their changelog records are sent. The commit's state stage
  (streams/commit.py) takes what is staged, waits for the broker to acknowledge the records, then
  writes the keys to RocksDB with the offset of the last record in one batch per partition
  (`commit`). A kill before that leaves the keys and the offset of before, and recovery reads the
  records from that offset: the store is always its changelog up to the offset it holds.
- **Recovery** is Faust's: it asks `persisted_offset` and applies the changelog from there
  (`apply_changelog_batch`, the offset written with the keys). A store ahead of the broker's
  changelog (a broker that lost its data) is reset by streams/repairs/recovery.py and read from
  the start, instead of Faust's ``ConsistencyError``.
- **Deleted values leave the disk**: a partition that had keys deleted is compacted on a timer,
  off the loop (sinks/statestore.py says why).
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faust
from faust.stores.base import Store
from faust.types import TP, EventT
from mode import Service

from engram.sinks.statestore import KeyValue, PartitionStore, StateStoreError, StateStoreMemory
from engram.streams.metrics import EngramMetrics

JsonState = dict[str, Any]


@dataclass(frozen=True, slots=True)
class DiskOptions:
    """Where a worker's table stores live and how much of them stays decoded in RAM."""

    folder: Path
    cache_keys: int = 100_000
    compact_interval_s: float = 60.0
    metrics: EngramMetrics | None = None
    memory: StateStoreMemory | None = None  # the worker's one RocksDB budget (None: a store's own)


class Staged:
    """One write whose changelog record is on its way: the partition, the raw key and value, and
    the record's offset once the broker acknowledged it (set on the producer's report thread)."""

    __slots__ = ("key", "offset", "partition", "raw_key", "raw_value", "state")

    def __init__(self, partition: int, key: str, state: JsonState | None, raw_key: bytes, raw_value: bytes | None):
        self.partition = partition
        self.key = key
        self.state = state
        self.raw_key = raw_key
        self.raw_value = raw_value
        self.offset: int | None = None

    def delivered(self, offset: int) -> None:
        self.offset = offset


class DiskTableStore(Store[str, JsonState]):
    """A Faust table store on a `PartitionStore` (module docstring). Written only through `stage`
    and `commit`; read through `get_state` and `iter_keys`."""

    def __init__(self, *args: Any, disk: DiskOptions, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.disk = PartitionStore(disk.folder, disk.memory)
        self.cache_keys = disk.cache_keys
        self.compact_interval_s = disk.compact_interval_s
        self.hot: OrderedDict[str, JsonState] = OrderedDict()
        self.partition_of: dict[str, int] = {}
        self.staged: list[Staged] = []
        self.latest: dict[str, Staged] = {}  # the newest staged write of each key not yet on disk
        self.deleted_in: set[int] = set()  # partitions with deletes not compacted yet
        self.disk_reads = 0
        self.recovered = 0
        self.metrics = disk.metrics

    # -- Engram's reads and writes (streams/tables.py) --

    def get_state(self, key: str) -> JsonState | None:
        staged = self.latest.get(key)
        if staged is not None:
            return staged.state
        value = self.hot.get(key)
        if value is not None:
            self.hot.move_to_end(key)
            return value
        raw, partition = self._read(key)
        if raw is None:
            return None
        self.disk_reads += 1
        if self.metrics is not None:
            self.metrics.state_disk_reads.labels(self.table_name).inc()
        state: JsonState = self._decode_value(raw)
        self.partition_of[key] = partition
        self._cache(key, state)
        return state

    def _read(self, key: str) -> tuple[bytes | None, int]:
        raw_key = self._encode_key(key)
        known = self.partition_of.get(key)
        for partition in [known] if known is not None else self.disk.opened():
            raw = self.disk.get(partition, raw_key)
            if raw is not None:
                return raw, partition
        return None, -1

    def _cache(self, key: str, state: JsonState) -> None:
        self.hot[key] = state
        while len(self.hot) > self.cache_keys:
            self.hot.popitem(last=False)

    def stage(self, partition: int, key: str, state: JsonState | None) -> Staged:
        """Set (or, with None, delete) ``key`` for reads now; on disk at the `commit` that takes it."""
        raw_value = None if state is None else self._encode_value(state)
        staged = Staged(partition, key, state, self._encode_key(key), raw_value)
        self.staged.append(staged)
        self.latest[key] = staged
        self.partition_of[key] = partition
        if state is None:
            self.hot.pop(key, None)
        else:
            self._cache(key, state)
        return staged

    def take_staged(self) -> list[Staged]:
        """What is staged so far, for a `commit` once its changelog records are acknowledged."""
        taken, self.staged = self.staged, []
        return taken

    async def commit(self, taken: list[Staged]) -> None:
        """Write ``taken`` (every record acknowledged) to disk with its offsets, off the loop."""
        if not taken:
            return
        self.deleted_in |= await asyncio.to_thread(self._write, taken)
        for staged in taken:
            if self.latest.get(staged.key) is staged:
                del self.latest[staged.key]

    def _write(self, taken: list[Staged]) -> set[int]:
        """Write on a worker thread; the partitions that had keys deleted."""
        by_partition: dict[int, tuple[list[KeyValue], int]] = {}
        for staged in taken:
            if staged.offset is None:
                msg = f"state key {staged.key!r} committed before its changelog record was acknowledged"
                raise StateStoreError(msg)
            items, offset = by_partition.get(staged.partition, ([], -1))
            items.append((staged.raw_key, staged.raw_value))
            by_partition[staged.partition] = (items, max(offset, staged.offset))
        for partition, (items, offset) in by_partition.items():
            self.disk.write(partition, items, offset)
        return {partition for partition, (items, _) in by_partition.items() if any(v is None for _, v in items)}

    def iter_keys(self) -> Iterator[str]:
        """Every key: those on disk in the open partitions, with the staged writes over them."""
        for partition in self.disk.opened():
            for raw_key in self.disk.keys(partition):
                key: str = self._decode_key(raw_key)
                if key not in self.latest:
                    yield key
        yield from [key for key, staged in self.latest.items() if staged.state is not None]

    @Service.task
    async def _compact_deleted(self) -> None:
        while not self.should_stop:
            await self.sleep(self.compact_interval_s)
            partitions, self.deleted_in = sorted(self.deleted_in), set()
            for partition in partitions:
                await asyncio.to_thread(self.disk.compact, partition)

    # -- Faust's store interface: recovery and rebalances --

    def apply_changelog_batch(
        self, batch: Iterable[EventT[Any]], to_key: Callable[[Any], Any], to_value: Callable[[Any], Any]
    ) -> None:
        """Recovery: write the changelog records (a None value deletes) with their last offset."""
        by_partition: dict[int, tuple[list[KeyValue], int]] = {}
        for event in batch:
            message = event.message
            items, offset = by_partition.get(message.partition, ([], -1))
            if message.key is None:  # a changelog record always has its key; skip one that has none
                continue
            items.append((message.key, message.value))
            by_partition[message.partition] = (items, max(offset, message.offset))
            key = self._decode_key(message.key)
            self.hot.pop(key, None)
            self.partition_of[key] = message.partition
        for partition, (items, offset) in by_partition.items():
            self.disk.write(partition, items, offset)
            self.recovered += len(items)
            if self.metrics is not None:
                self.metrics.state_recovered.labels(self.table_name).inc(len(items))

    def persisted_offset(self, tp: TP) -> int | None:
        return self.disk.offset(tp.partition)

    def set_persisted_offset(self, tp: TP, offset: int) -> None:
        self.disk.write(tp.partition, [], offset)

    def reset_partition(self, partition: int) -> None:
        """Forget the partition's store: its changelog is read again from the start."""
        self.disk.reset(partition)
        self._forget(partition)

    def reset_state(self) -> None:
        self.disk.destroy()
        self.hot.clear()
        self.partition_of.clear()

    async def on_rebalance(
        self, assigned: set[TP], revoked: set[TP], newly_assigned: set[TP], generation_id: int = 0
    ) -> None:
        topic = self.table.changelog_topic.get_topic_name()
        for tp in revoked:
            if tp.topic == topic:
                self.disk.close(tp.partition)
                self._forget(tp.partition)

    def _forget(self, partition: int) -> None:
        for key in [k for k, p in self.partition_of.items() if p == partition]:
            del self.partition_of[key]
            self.hot.pop(key, None)

    async def on_recovery_completed(self, active_tps: set[TP], standby_tps: set[TP]) -> None:
        return

    async def backup_partition(self, tp: TP | int, flush: bool = True, purge: bool = False, keep: int = 1) -> None:
        return

    def restore_backup(self, tp: TP | int, latest: bool = True, backup_id: int = 0) -> None:
        return

    async def on_stop(self) -> None:
        self.disk.close_all()

    # -- a Mapping for Faust; Engram's own reads and writes use the methods above --

    def __getitem__(self, key: str) -> JsonState:
        value = self.get_state(key)
        if value is None:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: JsonState) -> None:
        msg = "a disk table is written with its partition (FaustTable.write), not by key alone"
        raise TypeError(msg)

    def __delitem__(self, key: str) -> None:
        msg = "a disk table is written with its partition (FaustTable.write), not by key alone"
        raise TypeError(msg)

    def __iter__(self) -> Iterator[str]:
        return self.iter_keys()

    def __len__(self) -> int:
        return sum(1 for _ in self.iter_keys())


class DiskTable(faust.Table[str, JsonState]):
    """A Faust table whose store is a `DiskTableStore` under ``disk.folder``."""

    def __init__(self, *args: Any, disk: DiskOptions, **kwargs: Any) -> None:
        self.disk = disk
        super().__init__(*args, **kwargs)

    def _new_store(self) -> DiskTableStore:
        return DiskTableStore(
            "engram-disk://",
            self.app,
            self,
            table_name=self.name,
            key_type=self.key_type,
            key_serializer=self.key_serializer,
            value_serializer=self.value_serializer,
            value_type=self.value_type,
            loop=self.loop,
            options=self.options,
            disk=self.disk,
        )
