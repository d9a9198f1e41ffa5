"""Faust tables as the per-key working state of the agents (`streams.commit.StateTable`).

Keys are strings and values JSON-able dicts. A batched agent has no single "current event", so
Faust's implicit choice of changelog partition would be wrong for all but one key: every write
names its partition explicitly, the *source* partition of the key's records, which keeps table
and input co-partitioned.

A worker's tables send their changelog records through the worker's confluent-kafka producer
(streams/repairs/changelog.py says why not through Faust's), and the commit's state stage waits
for them (`FaustTable.flush`) before the batch is acknowledged.

Where a table's keys live is ``ENGRAM_STATE_STORE``: ``disk`` (the default) keeps them in a
RocksDB per partition under the worker's data folder with the changelog offset they reflect
(streams/tablestore.py), so a restart reads only the changelog's tail; ``memory`` is Faust's
in-RAM store, whose restart reads the whole changelog.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from faust.types import AppT, TableT

from engram.sinks.statestore import StateStoreMemory
from engram.streams.commit import JsonState, StateTable
from engram.streams.config import EngramConfig
from engram.streams.metrics import EngramMetrics
from engram.streams.repairs.changelog import ChangelogProducer, send_changelog_record
from engram.streams.tablestore import DiskOptions, DiskTable, DiskTableStore

# A busy user's trace state is a few hundred KiB of JSON and grows with their sessions; Kafka's
# default 1 MB message limit would make its changelog record undeliverable.
STATE_MAX_BYTES: Final = 16 * 1024 * 1024


def state_table(
    app: AppT,
    name: str,
    config: EngramConfig,
    metrics: EngramMetrics | None = None,
    memory: StateStoreMemory | None = None,
) -> TableT[Any, Any]:
    """A per-key working-state table co-partitioned with the input topics; on disk, its stores share
    the worker's RocksDB budget ``memory``.

    No key/value *type* is given, because Faust would then treat ``dict`` as a model class when it
    recovers the changelog. Untyped, both are JSON.
    """
    kwargs: dict[str, Any] = {
        "default": None,
        "partitions": config.partitions,
        "extra_topic_configs": {"max.message.bytes": str(STATE_MAX_BYTES)},
    }
    if config.state_store == "memory":
        return app.Table(name, **kwargs)
    folder = Path(app.conf.tabledir) / name
    disk = DiskOptions(folder, config.state_cache_keys, config.state_compact_interval_s, metrics, memory)
    table = DiskTable(app, name=name, beacon=app.tables.beacon, disk=disk, **kwargs)
    app.tables.add(table)
    return table


class DiskCommits:
    """A worker's tables on disk, committed together: whichever table's state stage flushes the
    changelog producer commits every table's writes staged before it (they are all acknowledged
    once the shared producer's flush returns). A table written outside a batch's state stage (the
    view's SLB epochs, streams/agents/compile.py) therefore reaches the disk at the next flush of
    any table, and its staged writes never pile up in RAM."""

    def __init__(self) -> None:
        self.stores: list[DiskTableStore] = []

    async def flush(self, changelog: ChangelogProducer) -> None:
        taken = [(store, store.take_staged()) for store in self.stores]
        await changelog.flush()
        for store, staged in taken:
            await store.commit(staged)


class FaustTable(StateTable):
    """A Faust table read as a mapping, written through ``changelog`` (the worker's producer): on
    disk (`DiskTableStore`) once the records are acknowledged (`DiskCommits`), or in Faust's RAM
    store at once."""

    def __init__(
        self, table: TableT[Any, Any], changelog: ChangelogProducer, commits: DiskCommits | None = None
    ) -> None:
        self.table = table
        self.changelog = changelog
        data = table.data
        self.disk = data if isinstance(data, DiskTableStore) else None
        self.commits = commits or DiskCommits()
        if self.disk is not None:
            self.commits.stores.append(self.disk)
        self.topic = table.changelog_topic.get_topic_name()

    def __getitem__(self, key: str) -> JsonState:
        value: JsonState | None = self.disk.get_state(key) if self.disk is not None else self.table.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.disk.iter_keys() if self.disk is not None else self.table.keys()))

    def __len__(self) -> int:
        return len(self.disk) if self.disk is not None else len(self.table)

    def write(self, partition: int, key: str, state: JsonState | None) -> None:
        if self.disk is None:
            send_changelog_record(self.table, self.changelog, partition, key, state)
            return
        staged = self.disk.stage(partition, key, state)
        self.changelog.send_to(self.topic, partition, staged.raw_key, staged.raw_value, staged.delivered)

    async def flush(self) -> None:
        await self.commits.flush(self.changelog)
