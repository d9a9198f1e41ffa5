"""`engram deadletters [--follow] [--json]`: what the workers refused, and why, readable.

Reads ``engram.deadletter`` from its beginning (every partition) and prints one line per dead
letter: when it was dead-lettered (UTC), the refused record's ``topic/partition/offset`` (what
`engram trace back` takes), the reason's class and the reason. ``--follow`` then keeps printing
new ones as they come (Ctrl-C stops). ``--json`` prints one JSON object a line instead. Broker,
topics and codec come from the ENGRAM_* environment over the running stack (streams/local.py).
The SDK reads them too (`engram_client.read_dead_letter`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Generator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from engram.streams.local import add_broker_flag, command_config

POLL_S = 0.2


def register(sub: Any) -> None:
    parser = sub.add_parser("deadletters", help="print the dead letters: time, source offset, reason class, reason")
    parser.add_argument("--follow", action="store_true", help="keep printing new dead letters (Ctrl-C stops)")
    parser.add_argument("--json", action="store_true", help="one JSON object a line")
    add_broker_flag(parser)
    parser.set_defaults(func=run)


@dataclass(frozen=True, slots=True)
class Letter:
    """A dead letter as read, or why it could not be (``error``: then only the position is known).
    ``time_ms``: its Kafka timestamp; ``at``: its own position in the dead-letter topic."""

    time_ms: int
    at: str
    record: dict[str, Any] | None
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        if self.record is None:
            return {"time_ms": self.time_ms, "at": self.at, "error": self.error}
        r = self.record
        value = r["value"]
        return {
            "time_ms": self.time_ms, "topic": r["topic"], "partition": r["partition"], "offset": r["offset"],
            "reason_class": r.get("reason_class") or "", "reason": r["reason"], "error_type": r["error_type"],
            "stage": r["stage"], "key": None if r["key"] is None else r["key"].decode("utf-8", "replace"),
            "value_bytes": None if value is None else len(value),
        }  # fmt: skip

    def line(self) -> str:
        when = datetime.fromtimestamp(self.time_ms / 1000, tz=UTC).strftime("%Y-%m-%d %H:%M:%S")
        if self.record is None:
            return f"{when}  {self.at}  (undecodable dead letter: {self.error})"
        r = self.record
        source = f"{r['topic']}/{r['partition']}/{r['offset']}"
        return f"{when}  {source}  {r.get('reason_class') or r['error_type']}  {r['reason']}"


def dead_letters(
    bootstrap: str, topic: str, codec: Any, follow: bool, timeout_s: float = 20.0
) -> Generator[Letter, None, None]:
    """The dead letters of ``topic`` from its beginning; at the end of every partition the
    iteration stops, unless ``follow``. End of data is the consumer's end-of-partition event
    (the stand-in broker's reported ends are wrong)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"engram-deadletters-{time.monotonic_ns()}",
                         "enable.auto.commit": False, "enable.partition.eof": True})  # fmt: skip
    try:
        found = consumer.list_topics(topic, timeout=timeout_s).topics.get(topic)
        partitions = set(found.partitions) if found is not None and found.error is None else set()
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
        at_end: set[int] = set()
        while follow or at_end != partitions:
            message = consumer.poll(POLL_S)
            if message is None:
                continue
            error = message.error()
            if error is not None and error.code() == KafkaError._PARTITION_EOF:
                at_end.add(message.partition() or 0)
                continue
            if error is not None:
                raise KafkaException(error)
            at_end.discard(message.partition() or 0)
            yield _letter(message, codec)
    finally:
        consumer.close()


def _letter(message: Any, codec: Any) -> Letter:
    from engram.schemas.codec import CodecError

    at = f"{message.topic()}/{message.partition()}/{message.offset()}"
    time_ms = int(message.timestamp()[1])
    try:
        return Letter(time_ms, at, dict(codec.decode(message.value() or b"")))
    except CodecError as exc:
        return Letter(time_ms, at, None, str(exc))


def run(args: argparse.Namespace) -> int:
    from engram.streams.codecs import TopicCodecs

    config = command_config(os.environ, args)
    codec = TopicCodecs.for_config(config).deadletter
    seen = 0
    try:
        for letter in dead_letters(config.bootstrap_servers, config.topics.deadletter, codec, args.follow):
            print(json.dumps(letter.to_json(), sort_keys=True) if args.json else letter.line(), flush=True)
            seen += 1
    except KeyboardInterrupt:
        return 0
    if not seen and not args.json:
        print(f"no dead letters on {config.topics.deadletter}", file=sys.stderr)
    return 0
