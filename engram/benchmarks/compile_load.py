"""Loading one scenario's memory into the worker of ``engram bench compile``, and knowing it is there.

The worker derives memory of its own from what the bench loads (the facts step's facts; dreams'
gists, rules, profiles, TOC nodes and NEXT edits; dormancy), so node counts are the worker's
business and the bench never waits on them. It waits on what it can know, in three phases:

1. **published**: every MemoryEvent it produced is acknowledged, and the delivery reports say on
   which partition and at which offset each one landed (`Published`).
2. **applied**: the worker's view has applied, for every principal, the last offset the bench
   published on each partition holding memory the principal may see (``/view`` → ``applied``, the
   view's engram.memory watermarks). The view applies a batch after the event log and the stores
   (streams/commit.py), so the stores hold it too. The bench's one worker owns every partition, so
   its memory agent feeds all of them to its view. Then the view must hold at least every node the
   bench built that the principal may see: nothing but an erasure removes a node, and a dormant
   one stays among the view's records, so fewer is an error (`ViewIncompleteError`), not a wait.
3. **drained**: the worker is done with what the memory made it derive. Its group's committed
   offsets on engram.memory reach the topic's end, its view applied the replica topic to its end,
   and the memory topic's end has not moved since: offsets are committed only after a batch's
   derived events are delivered (streams/commit.py), so an end read after the commit includes
   them. Nothing the load started then competes with the timed requests.

Ends are read by fetching (streams/repairs/ends.py), never from the stand-in's ``ListOffsets``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import Consumer, Message, TopicPartition

from engram.benchmarks.compile_memory import Layout, Memory
from engram.processors.rebac import USER_LAYER
from engram.streams.admin import Publisher
from engram.streams.config import EngramConfig
from engram.streams.repairs.ends import topic_ends
from engram.streams.runner import WorkerProcess

POLL_S: Final = 1.0  # /view counts the view on the compile thread: not too often
REPORT_EVERY_S: Final = 10.0

Offsets = dict[int, int]  # partition -> next offset (last + 1)


class ViewIncompleteError(RuntimeError):
    """The view applied every offset the bench published and still lacks nodes it built."""


@dataclass
class Published:
    """Where the bench's memory landed: per key (author) its partition, per partition its end."""

    partitions: dict[str, int] = field(default_factory=dict)
    ends: Offsets = field(default_factory=dict)

    def note(self, message: Message) -> None:
        partition, offset = message.partition() or 0, message.offset() or 0
        self.partitions[(message.key() or b"").decode()] = partition
        self.ends[partition] = max(self.ends.get(partition, 0), offset + 1)

    def required(self, layout: Layout) -> dict[str, Offsets]:
        """Per principal, the end of every partition that holds memory it may see."""
        return {
            principal: {p: self.ends[p] for p in sorted({self.partitions[a] for a in authors})}
            for principal, authors in layout.visible_authors().items()
        }


def publish(config: EngramConfig, memory: Memory) -> Published:
    published = Published()
    publisher = Publisher(config.bootstrap_servers, on_delivered=published.note)
    for key, value in memory.payloads:
        publisher.publish(config.topics.memory, key, value)
    publisher.flush(120.0)
    return published


def view_page(worker: WorkerProcess) -> dict[str, Any]:
    page = worker.page("/view")
    held: dict[str, Any] = json.loads(page) if page else {}
    return held


def applied_offsets(held: Mapping[str, Any], topic: str) -> Offsets:
    """The view's next offset per partition of ``topic`` (``memory`` or ``shared``), from ``/view``."""
    return {int(p): int(n) for p, n in held.get("applied", {}).get(topic, {}).items()}


def behind(applied: Offsets, ends: Offsets) -> Offsets:
    """The partitions whose end lies past what was applied, with the offsets still to apply."""
    return {p: end - applied.get(p, 0) for p, end in ends.items() if applied.get(p, 0) < end}


def held_visible(held: Mapping[str, Any], layout: Layout) -> dict[str, int]:
    """Per principal, the nodes the view holds that it may see under ``layout.layers`` (the bench's
    worker is open: every instance of a shared layer): the shared layers' nodes plus its own
    USER-layer nodes (``/view`` counts nodes by layer and USER nodes by user)."""
    layers: Mapping[str, int] = held.get("layers", {})
    users: Mapping[str, int] = held.get("users", {})
    shared = sum(layers.get(layer, 0) for layer in layout.layers if layer != USER_LAYER)
    own = USER_LAYER in layout.layers
    return {p: shared + (users.get(p, 0) if own else 0) for p in layout.principals()}


def wait_until(done: Callable[[], str | None], what: str, timeout_s: float, note: Callable[[str], None]) -> float:
    """Poll ``done`` (None when done, else what is still missing) until it is done; returns the
    seconds waited. Raises TimeoutError with what was missing after ``timeout_s``."""
    started = last_note = time.monotonic()
    while (missing := done()) is not None:
        now = time.monotonic()
        if now - started > timeout_s:
            msg = f"{what}: not done after {timeout_s:.0f}s; missing {missing}"
            raise TimeoutError(msg)
        if now - last_note >= REPORT_EVERY_S:
            last_note = now
            note(f"{what}: waiting ({now - started:.0f}s), missing {missing}")
        time.sleep(POLL_S)
    return time.monotonic() - started


def view_applied(
    worker: WorkerProcess, layout: Layout, published: Published, timeout_s: float, note: Callable[[str], None]
) -> dict[str, Any]:
    """Phase 2: wait until the view applied what each principal may see; then check it holds every
    node built for it. Returns the ``/view`` page it checked."""
    required = published.required(layout)
    page: dict[str, Any] = {}

    def missing() -> str | None:
        nonlocal page
        page = view_page(worker)
        applied = applied_offsets(page, "memory")
        short = {who: gap for who, ends in required.items() if (gap := behind(applied, ends))}
        if not short:
            return None
        partitions: dict[int, int] = {}
        for gap in short.values():
            for partition, left in gap.items():
                partitions[partition] = max(left, partitions.get(partition, 0))
        return f"{len(short)} principals wait on offsets still to apply, by partition: {json.dumps(partitions)}"

    wait_until(missing, "the view applying the published memory", timeout_s, note)
    built, held = layout.visible_counts(), held_visible(page, layout)
    lacking = {p: (held.get(p, 0), n) for p, n in built.items() if held.get(p, 0) < n}
    if lacking:
        msg = f"the view applied every published offset but lacks nodes built for (held, built): {lacking}"
        raise ViewIncompleteError(msg)
    return page


def committed(config: EngramConfig, partitions: Offsets) -> Offsets:
    """The worker group's committed offset per partition of engram.memory (0 when none)."""
    consumer = Consumer({"bootstrap.servers": config.bootstrap_servers, "group.id": config.app_id})
    try:
        asked = [TopicPartition(config.topics.memory, p) for p in partitions]
        return {tp.partition: max(tp.offset, 0) for tp in consumer.committed(asked, timeout=10)}
    finally:
        consumer.close()


def drained(worker: WorkerProcess, config: EngramConfig, timeout_s: float, note: Callable[[str], None]) -> float:
    """Phase 3: wait until the worker committed engram.memory to its end, its view applied the
    replica topic to its end, and the memory topic's end stayed put meanwhile; returns seconds."""
    bootstrap, topics = config.bootstrap_servers, config.topics

    def missing() -> str | None:
        ends = topic_ends(bootstrap, topics.memory)
        uncommitted = behind(committed(config, ends), ends)
        if uncommitted:
            return f"engram.memory uncommitted {uncommitted}"
        unapplied = behind(applied_offsets(view_page(worker), "shared"), topic_ends(bootstrap, topics.shared))
        if unapplied:
            return f"replica unapplied {unapplied}"
        grown = behind(ends, topic_ends(bootstrap, topics.memory))
        return f"engram.memory grew {grown}" if grown else None

    return wait_until(missing, "the worker deriving from its memory", timeout_s, note)
