"""`engram replay`: republish archived records from the event log to a topic (backfills).

Reads the durable segments of the chosen topics (optionally an offset range and/or a time range),
produces each record's raw key and value to the target topic in log order (sealed records opened
with the log's key store, those of erased subjects skipped and counted), with a progress bar
on stderr and an optional rate limit, and prints a summary (text, or one JSON object).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engram.sinks.eventlog import (
    EventLogReader,
    ReplayRangeError,
    Republisher,
    TokenBucket,
    keeps_partitions,
    reader_keys,
    replay_range,
)


def register(sub: Any) -> None:
    parser = sub.add_parser("replay", help="republish archived records from the event log to a topic")
    parser.add_argument("--log", type=Path, required=True, help="event log root folder")
    parser.add_argument("--keys", type=Path, default=None, help="the log's key folder (default: keys/ beside the log)")
    parser.add_argument("--topics", nargs="+", required=True, metavar="T", help="archived topics to read")
    parser.add_argument("--to", dest="target", required=True, metavar="TARGET_TOPIC", help="topic to produce to")
    parser.add_argument("--bootstrap", required=True, metavar="HOST:PORT", help="Kafka bootstrap servers")
    parser.add_argument("--from-offset", type=int, default=None, help="first source offset (inclusive)")
    parser.add_argument("--to-offset", type=int, default=None, help="last source offset (inclusive)")
    parser.add_argument("--since", default=None, help="first event time, ISO 8601 or epoch ms (inclusive; UTC)")
    parser.add_argument("--until", default=None, help="end event time, ISO 8601 or epoch ms (exclusive; UTC)")
    parser.add_argument("--rate", type=float, default=None, metavar="N", help="at most N messages/s")
    parser.add_argument("--json", action="store_true", help="print the summary as one JSON object")
    parser.set_defaults(func=handle)


def _target_partitions(producer: Any, target: str) -> int:
    metadata = producer.list_topics(target, timeout=10.0)
    topic = metadata.topics.get(target)
    if topic is None or topic.error is not None or not topic.partitions:
        reason = "not found" if topic is None else (topic.error or "no partitions")
        msg = f"target topic {target!r}: {reason}"
        raise RuntimeError(msg)
    return len(topic.partitions)


def handle(args: argparse.Namespace) -> int:
    try:
        window = replay_range(args.from_offset, args.to_offset, args.since, args.until)
    except ReplayRangeError as exc:
        print(f"engram replay: {exc}", file=sys.stderr)
        return 2
    if not args.log.is_dir():
        print(f"engram replay: no event log at {args.log}", file=sys.stderr)
        return 2
    from confluent_kafka import Producer

    reader = EventLogReader(args.log, reader_keys(args.log, args.keys))  # erased subjects are skipped
    # Strict order per partition: one request in flight, so a retry cannot overtake.
    producer = Producer(
        {"bootstrap.servers": args.bootstrap, "linger.ms": 5, "max.in.flight.requests.per.connection": 1}
    )
    try:
        partitions = _target_partitions(producer, args.target)
    except RuntimeError as exc:
        print(f"engram replay: {exc}", file=sys.stderr)
        return 2
    missing = [topic for topic in args.topics if not reader.partitions(topic)]
    if missing:
        print(f"engram replay: nothing logged for {', '.join(missing)} under {args.log}", file=sys.stderr)
    sources = {p for topic in args.topics for p in reader.partitions(topic)}
    republisher = Republisher(
        producer,
        args.target,
        keep_partitions=keeps_partitions(sources, partitions),
        rate_limit=None if args.rate is None else TokenBucket(args.rate),
    )
    total = reader.count_upper_bound(args.topics, window)
    with tqdm(total=total, desc=f"replay -> {args.target}", unit="msg", file=sys.stderr) as progress:
        summary = republisher.run(reader.read(args.topics, window), on_progress=progress.update)
    result = summary.as_dict() | {
        "topics": list(args.topics),
        "keep_partitions": republisher.keep_partitions,
        "erased": reader.erased,
    }
    if args.json:
        print(json.dumps(result, sort_keys=True))
    else:
        print(
            f"replayed {summary.delivered}/{summary.read} records from {', '.join(args.topics)} to {args.target} "
            f"in {summary.seconds:.2f}s ({result['messages_per_s']} msg/s); failed {summary.failed}, "
            f"undelivered {summary.undelivered}; skipped {reader.erased} of erased subjects"
        )
        if summary.first_error:
            print(f"first error: {summary.first_error}")
    return 0 if summary.failed == 0 and summary.undelivered == 0 else 1
