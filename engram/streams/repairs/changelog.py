"""A table's changelog records sent through the worker's confluent-kafka producer, not Faust's.

Faust 0.15.3's ``Collection.send_changelog`` sends each record through Faust's producer on the
event loop, with a future and a callback of its own: measured at 10,000 bench turns, every state
record written cost the worker's loop about 75 µs. And a delete (a None value) went out as JSON
``null``, a record compaction keeps, not a tombstone it removes.

`send_changelog_record` serializes key and value as ``send_changelog`` does (the changelog
topic's ``prepare_key``/``prepare_value`` with the table's serializers), sends a delete as a
tombstone (a None value), and hands the record to a `ChangelogProducer`
(`streams.output.EventProducer`), whose ``flush`` the commit's state stage awaits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from faust.types import TableT

from engram.streams.commit import JsonState


class ChangelogProducer(Protocol):
    """Sends a table's changelog records (`streams.output.EventProducer`)."""

    def send_to(
        self,
        topic: str,
        partition: int,
        key: bytes,
        value: bytes | None,
        on_offset: Callable[[int], None] | None = None,
    ) -> None: ...

    async def flush(self) -> None: ...


def send_changelog_record(
    table: TableT[Any, Any], producer: ChangelogProducer, partition: int, key: str, state: JsonState | None
) -> None:
    """Set (or delete) ``key`` in the table's store and send its changelog record to ``partition``
    through ``producer``; a delete is a tombstone."""
    faust_table: Any = table  # the serializers are the Table's, not in TableT
    data: Any = faust_table.data
    topic = faust_table.changelog_topic
    raw_key, _ = topic.prepare_key(key, faust_table.key_serializer)
    if state is None:
        data.pop(key, None)
        raw_value = None
    else:
        data[key] = state
        raw_value, _ = topic.prepare_value(state, faust_table.value_serializer)
    producer.send_to(topic.get_topic_name(), partition, raw_key, raw_value)
