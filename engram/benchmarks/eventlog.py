"""Event log: append and replay throughput of ConversationTurn-sized records (fsync per batch).

Builds deterministic ConversationTurn records, encodes them with the production codec, appends
them through ``EventLogSink`` in batches (one fsynced OCF block and one checkpoint per batch and
partition) into a temporary folder, then reads everything back with ``EventLogReader``.
Progress goes to stderr; the result is one JSON object.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from tqdm import tqdm

from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, Role
from engram.sinks.base import SinkConfig
from engram.sinks.eventlog import EventLogConfig, EventLogReader, EventLogSink
from engram.sinks.eventlog.config import MIB

TOPIC = "engram.turns"
_TEXT = (
    "the deploy failed because the migration locked the orders table for twelve minutes while "
    "payments retried every call so we rolled back and I want a runbook for schema changes that "
    "keeps writes online please remind me which service owns the ledger and what we decided about "
    "retries on Friday my daughter starts school next week so mornings are busy"
)
_WORDS = tuple(_TEXT.split(" "))
_ROLES: tuple[Role, ...] = ("user", "assistant", "tool", "user")
_BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--events", type=int, default=200_000, help="records to append and replay")
    parser.add_argument("--batch", type=int, default=1_000, help="records per fsynced batch and partition")
    parser.add_argument("--partitions", type=int, default=2, help="partitions of the archived topic")
    parser.add_argument("--users", type=int, default=200, help="distinct user keys")
    parser.add_argument("--segment-mib", type=int, default=64, help="segment roll size in MiB")
    parser.add_argument("--flush-threads", type=int, default=4, help="partitions flushed at once (1: one by one)")
    parser.add_argument("--dir", type=Path, default=None, help="write here instead of a temporary folder")


def conversation_turn(i: int, users: int) -> ConversationTurn:
    """A realistic turn: 20-45 words of content, a causal parent, metadata; deterministic in ``i``."""
    user = i % users
    turn_index = i // users
    start = (i * 7919) % len(_WORDS)
    length = 20 + (i * 31) % 26
    content = " ".join(_WORDS[(start + k) % len(_WORDS)] for k in range(length))
    return {
        "turn_id": f"turn-{user:04d}-{turn_index:07d}",
        "user_id": f"user-{user:04d}",
        "agent_id": "agent-support",
        "flow_id": None,
        "session_id": f"session-{user:04d}-{turn_index // 20:05d}",
        "turn_index": turn_index,
        "role": _ROLES[i % len(_ROLES)],
        "content": content,
        "event_time_ms": _BASE_MS + i * 250,
        "layer": "USER",
        "causal_parent_ids": [f"turn-{user:04d}-{turn_index - 1:07d}"] if turn_index else [],
        "tool_calls": [],
        "metadata": {"channel": "chat", "locale": "en-GB"},
    }


def turn_records(events: int, users: int, partitions: int) -> Iterator[Record[bytes]]:
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    next_offset = [0] * partitions
    for i in range(events):
        turn = conversation_turn(i, users)
        partition = (i % users) % partitions
        offset = next_offset[partition]
        next_offset[partition] += 1
        key = turn["user_id"].encode()
        yield Record(TOPIC, partition, offset, turn["event_time_ms"], key, codec.encode(turn))


def run(args: argparse.Namespace) -> dict[str, object]:
    if args.dir is not None:
        args.dir.mkdir(parents=True, exist_ok=True)
        return _measure(args, args.dir)
    with tempfile.TemporaryDirectory(prefix="engram-bench-eventlog-") as tmp:
        return _measure(args, Path(tmp))


def _measure(args: argparse.Namespace, root: Path) -> dict[str, object]:
    progress = tqdm(total=args.events, desc="encode", unit="ev", file=sys.stderr, leave=False)
    items = []
    for item in turn_records(args.events, args.users, args.partitions):
        items.append(item)
        progress.update(1)
    progress.close()
    value_bytes = sum(len(item.value) for item in items)

    config = EventLogConfig(segment_bytes=args.segment_mib * MIB, flush_threads=args.flush_threads)
    sink = EventLogSink(root, config, SinkConfig(max_batch=args.batch))
    sink.setup()
    step = args.batch * args.partitions
    progress = tqdm(total=len(items), desc="append", unit="ev", file=sys.stderr, leave=False)
    cpu_started = time.process_time()
    started = time.perf_counter()
    for start in range(0, len(items), step):
        for item in items[start : start + step]:
            sink.add(item)
        sink.flush()
        progress.update(min(step, len(items) - start))
    append_s = time.perf_counter() - started
    append_cpu_s = time.process_time() - cpu_started
    progress.close()
    sink.close()

    reader = EventLogReader(root)
    progress = tqdm(total=len(items), desc="replay", unit="ev", file=sys.stderr, leave=False)
    cpu_started = time.process_time()
    started = time.perf_counter()
    replayed = 0
    for replayed, _event in enumerate(reader.read([TOPIC]), start=1):
        if replayed % 10_000 == 0:
            progress.update(10_000)
    replay_s = time.perf_counter() - started
    replay_cpu_s = time.process_time() - cpu_started
    progress.close()
    if replayed != len(items):
        msg = f"replayed {replayed} records, appended {len(items)}"
        raise RuntimeError(msg)

    segments = sorted((root / TOPIC).glob("*/*.avro"))
    log_bytes = sum(path.stat().st_size for path in segments)
    return {
        "events": len(items),
        "append_events_per_s": round(len(items) / append_s, 1),
        "replay_events_per_s": round(replayed / replay_s, 1),
        "append_seconds": round(append_s, 3),
        "replay_seconds": round(replay_s, 3),
        # Per CPU second of this process: what the machine would do without other load.
        "append_events_per_cpu_s": round(len(items) / append_cpu_s, 1),
        "replay_events_per_cpu_s": round(replayed / replay_cpu_s, 1),
        "bytes": log_bytes,
        "segments": len(segments),
        "event_bytes_avg": round(value_bytes / len(items), 1),
        "log_bytes_per_event": round(log_bytes / len(items), 1),
        "batch": args.batch,
        "partitions": args.partitions,
        "fsync_per_batch": config.fsync,
        "flush_threads": config.flush_threads,
        "segment_bytes": config.segment_bytes,
    }
