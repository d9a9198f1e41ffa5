"""How many records the broker holds on a bench's topics: its input, output and memory topics and
the worker's table changelogs (records per turn or per request is what the broker pays for)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer

from engram.streams.repairs.ends import topic_ends


def records_held(bootstrap: str, name: str) -> int:
    """The records (end offsets summed) of every topic whose name holds ``name``."""
    return sum(records_by_topic(bootstrap, name).values())


def records_by_topic(bootstrap: str, name: str) -> dict[str, int]:
    """Per topic whose name holds ``name``, its records (end offsets summed over its partitions)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"engram-bench-records-{time.monotonic_ns()}"})
    try:
        topics = sorted(t for t in consumer.list_topics(timeout=10).topics if name in t)
    finally:
        consumer.close()
    return {topic: sum(topic_ends(bootstrap, topic).values()) for topic in topics}


def records_gained(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    """The records each topic gained between two counts, most first (topics that gained none left out)."""
    gained = {topic: count - before.get(topic, 0) for topic, count in after.items()}
    return {topic: n for topic, n in sorted(gained.items(), key=lambda kv: (-kv[1], kv[0])) if n}
