"""The immutable event log: append-only Avro OCF segments per topic partition, resumable.

See ``layout`` for the files, ``segment`` for the durable append protocol, ``reader`` for replay,
``sealed`` and ``keys`` for sealing user-scoped records with per-subject keys (erasure).
"""

from engram.sinks.eventlog.config import COMPACT, DEFAULT, SMALL_SEGMENTS, EventLogConfig
from engram.sinks.eventlog.keys import KeyStore, KeyStoreError, erase_subject, reader_keys
from engram.sinks.eventlog.layout import (
    NO_OFFSET,
    Checkpoint,
    EventLogCorruptError,
    EventLogError,
    InvalidTopicError,
)
from engram.sinks.eventlog.ratelimit import TokenBucket
from engram.sinks.eventlog.reader import EVERYTHING, EventLogReader, LogRange, SegmentSpan
from engram.sinks.eventlog.replay import (
    RecordProducer,
    ReplayRangeError,
    ReplaySummary,
    Republisher,
    keeps_partitions,
    parse_instant,
    replay_range,
)
from engram.sinks.eventlog.sealed import SealedRecordError, SealingPolicy, SubjectOf
from engram.sinks.eventlog.segment import AppendResult, SegmentWriter
from engram.sinks.eventlog.sink import AppendObserver, EventLogSink

__all__ = [
    "COMPACT",
    "DEFAULT",
    "EVERYTHING",
    "NO_OFFSET",
    "SMALL_SEGMENTS",
    "AppendObserver",
    "AppendResult",
    "Checkpoint",
    "EventLogConfig",
    "EventLogCorruptError",
    "EventLogError",
    "EventLogReader",
    "EventLogSink",
    "InvalidTopicError",
    "KeyStore",
    "KeyStoreError",
    "LogRange",
    "RecordProducer",
    "ReplayRangeError",
    "ReplaySummary",
    "Republisher",
    "SealedRecordError",
    "SealingPolicy",
    "SegmentSpan",
    "SegmentWriter",
    "SubjectOf",
    "TokenBucket",
    "erase_subject",
    "keeps_partitions",
    "parse_instant",
    "reader_keys",
    "replay_range",
]
