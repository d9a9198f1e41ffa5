"""Faust tables as the per-key working state of the agents (`streams.commit.StateTable`).

Keys are strings and values JSON-able dicts. A batched agent has no single "current event", so
Faust's implicit choice of changelog partition would be wrong for all but one key: every write
names its partition explicitly, the *source* partition of the key's records, which keeps table
and input co-partitioned.

A worker's tables send their changelog records through the worker's confluent-kafka producer
(streams/repairs/changelog.py says why not through Faust's), and the commit's state stage waits
for them (`FaustTable.flush`) before the batch is acknowledged.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

from faust.types import AppT, TableT

from engram.streams.commit import JsonState, StateTable
from engram.streams.config import EngramConfig
from engram.streams.repairs.changelog import ChangelogProducer, send_changelog_record

# A busy user's trace state is a few hundred KiB of JSON and grows with their sessions; Kafka's
# default 1 MB message limit would make its changelog record undeliverable.
STATE_MAX_BYTES: Final = 16 * 1024 * 1024


def state_table(app: AppT, name: str, config: EngramConfig) -> TableT[Any, Any]:
    """A per-key working-state table co-partitioned with the input topics.

    No key/value *type* is given, because Faust would then treat ``dict`` as a model class when it
    recovers the changelog. Untyped, both are JSON.
    """
    return app.Table(
        name,
        default=None,
        partitions=config.partitions,
        extra_topic_configs={"max.message.bytes": str(STATE_MAX_BYTES)},
    )


def write_state(table: TableT[Any, Any], partition: int, key: str, state: JsonState | None) -> None:
    """Set (or delete) a table key and send its changelog record to ``partition``."""
    data: Any = table.data  # Faust's store: a dict-like keyed by the raw key
    if state is None:
        data.pop(key, None)
    else:
        data[key] = state
    table.send_changelog(partition, key, state)


class FaustTable(StateTable):
    """A Faust table read as a mapping. Written through ``changelog`` when it has one, else through
    `write_state` (Faust's producer)."""

    def __init__(self, table: TableT[Any, Any], changelog: ChangelogProducer | None = None) -> None:
        self.table = table
        self.changelog = changelog

    def __getitem__(self, key: str) -> JsonState:
        value: JsonState | None = self.table.get(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(list(self.table.keys()))

    def __len__(self) -> int:
        return len(self.table)

    def write(self, partition: int, key: str, state: JsonState | None) -> None:
        if self.changelog is None:
            write_state(self.table, partition, key, state)
        else:
            send_changelog_record(self.table, self.changelog, partition, key, state)

    async def flush(self) -> None:
        if self.changelog is not None:
            await self.changelog.flush()
