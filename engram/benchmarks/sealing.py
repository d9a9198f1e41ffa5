"""What sealing the event log costs its append: the same records appended with and without it.

The records, batches and fsyncs of `engram bench eventlog` (ConversationTurn-sized values keyed by
user, one fsynced OCF block and checkpoint per batch and partition, partitions flushed at once),
appended ``rounds`` times in fresh folders with sealing off and on, alternately so that neither
gets the quieter moments of a shared machine. The subject keys are created once before the first
round (the cost a subject pays once, reported as ``first_use_ms_per_subject``); the rounds then
measure the steady state. ``ratio`` = min sealed seconds / min plain seconds (the minimum of a few
runs is the estimate least disturbed by other load).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from engram.benchmarks.eventlog import turn_records
from engram.schemas.record import Record
from engram.sinks.base import SinkConfig
from engram.sinks.eventlog import EventLogConfig, EventLogSink, KeyStore, SealingPolicy

GOAL_RATIO = 1.10


def by_key(_topic: str, key: bytes | None) -> str | None:
    """The worker's policy on a user-keyed topic (streams/sealing.py)."""
    return None if not key else key.decode("utf-8", "surrogateescape")


def append_seconds(root: Path, items: Sequence[Record[bytes]], batch: int, partitions: int,
                   sealing: SealingPolicy | None) -> float:  # fmt: skip
    """Wall seconds to append ``items`` through a fresh `EventLogSink` at ``root`` (fsync per batch)."""
    sink = EventLogSink(root, EventLogConfig(), SinkConfig(max_batch=batch), sealing=sealing)
    sink.setup()
    step = batch * partitions
    started = time.perf_counter()
    for start in range(0, len(items), step):
        for item in items[start : start + step]:
            sink.add(item)
        sink.flush()
    seconds = time.perf_counter() - started
    sink.close()
    return seconds


def measure(events: int, users: int = 200, partitions: int = 2, batch: int = 1_000, rounds: int = 3
            ) -> dict[str, object]:  # fmt: skip
    items = list(turn_records(events, users, partitions))
    with tempfile.TemporaryDirectory(prefix="engram-bench-sealing-") as tmp:
        folder = Path(tmp)
        keys = KeyStore(folder / "keys")
        keys.setup()
        started = time.perf_counter()
        keys.subject_keys({by_key("", item.key) or "" for item in items})
        first_use_s = time.perf_counter() - started
        policy = SealingPolicy(by_key, keys)
        plain, sealed = [], []
        for i in range(rounds):
            plain.append(append_seconds(folder / f"plain-{i}", items, batch, partitions, None))
            sealed.append(append_seconds(folder / f"sealed-{i}", items, batch, partitions, policy))
    ratio = min(sealed) / min(plain)
    return {
        "encryption_append_ratio": round(ratio, 4),
        "encryption_goal_met": ratio <= GOAL_RATIO,
        "encryption_plain_us_per_event": round(min(plain) / len(items) * 1e6, 2),
        "encryption_sealed_us_per_event": round(min(sealed) / len(items) * 1e6, 2),
        "encryption_first_use_ms_per_subject": round(first_use_s / users * 1000, 3),
        "encryption_sizes": {
            "events": len(items), "users": users, "partitions": partitions, "batch": batch, "rounds": rounds,
            "value_bytes_avg": round(sum(len(item.value) for item in items) / len(items), 1), "fsync_per_batch": True,
        },
    }  # fmt: skip
