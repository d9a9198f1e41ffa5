"""How many records the broker holds on a bench's topics: its input, output and memory topics and
the worker's table changelogs (records per turn or per request is what the broker pays for)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer

from engram.streams.repairs.ends import topic_ends


def records_held(bootstrap: str, name: str) -> int:
    """The records (end offsets summed) of every topic whose name holds ``name``."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"engram-bench-records-{time.monotonic_ns()}"})
    try:
        topics = [t for t in consumer.list_topics(timeout=10).topics if name in t]
    finally:
        consumer.close()
    return sum(sum(topic_ends(bootstrap, topic).values()) for topic in topics)
