"""A worker table's changelog records go through the worker's producer (streams/repairs/changelog.py), against a
real tansu: what the changelog holds decodes as Faust's recovery decodes it, a delete is a tombstone,
and the state stage returns only once the records are delivered. A table on disk
(streams/tablestore.py) holds the same keys after the stage, with the offset of its last record."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, cast

import faust
import pytest

from engram.infra.config import StackInfo
from engram.streams.admin import ensure_topics, read_topic
from engram.streams.commit import TableWrite, _write_states
from engram.streams.config import EngramConfig
from engram.streams.output import EventProducer
from engram.streams.tables import FaustTable, state_table
from engram.streams.tablestore import DiskTableStore


@pytest.mark.parametrize("store", ["disk", "memory"])
def test_state_writes_reach_the_changelog_as_faust_reads_them(
    stack: StackInfo, unique_name: str, store: str, tmp_path: Path
) -> None:
    bootstrap = stack.require_bootstrap_servers()
    app = faust.App(unique_name, broker=f"kafka://{bootstrap}", store="memory://", datadir=str(tmp_path))
    faust_table = state_table(app, "trace-state", EngramConfig(partitions=2, state_store=store))
    changelog = faust_table.changelog_topic.get_topic_name()
    ensure_topics(bootstrap, [changelog], partitions=2, compacted=[changelog])
    producer = EventProducer(bootstrap, extra={"enable.idempotence": False})
    table = FaustTable(faust_table, producer)
    writes = [TableWrite(table, 1, f"user-{i}", {"turns": i, "text": "é\x00"}) for i in range(30)]
    writes.append(TableWrite(table, 1, "user-3", None))

    asyncio.run(_write_states(writes, None))  # returns once the broker acknowledged every record

    assert dict(table) == {f"user-{i}": {"turns": i, "text": "é\x00"} for i in range(30) if i != 3}
    records = read_topic(bootstrap, changelog)
    assert [m.partition() for m in records] == [1] * 31
    serializers, faust_any = app.serializers, cast(Any, faust_table)  # the serializers are the Table's
    recovered: dict[str, object] = {}
    for message in records:  # as Faust's recovery applies a changelog: a None value deletes the key
        key = str(serializers.loads_key(None, message.key(), serializer=faust_any.key_serializer))
        if message.value() is None:
            recovered.pop(key, None)
        else:
            recovered[key] = serializers.loads_value(None, message.value(), serializer=faust_any.value_serializer)
    assert recovered == dict(table)
    if isinstance(faust_table.data, DiskTableStore):  # on disk: the same keys, at the last record's offset
        disk = faust_table.data.disk
        assert disk.offset(1) == records[-1].offset()
        on_disk = {
            faust_table.data._decode_key(k): faust_table.data._decode_value(disk.get(1, k)) for k in disk.keys(1)
        }
        assert on_disk == recovered
