"""Shared pieces of the Trace end-to-end tests (issue 3): LoCoMo input, a worker's config,
waiting on its metrics, reading memory back, replaying it into fresh stores, reading a graph by id.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import cast

import pytest

from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import (
    EDGE_REMOVED,
    NODE_UPSERTED,
    ConversationTurn,
    EdgeRemoved,
    EventRef,
    LoggedEvent,
    MemoryEvent,
    NodeUpserted,
)
from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
from engram.sinks.graph.sink import GraphSink
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.sink import QdrantSink
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import standin_config

LOCOMO_DIR = Path(__file__).resolve().parents[3] / "shared" / "benchdata" / "locomo"
TURN_CODEC: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
MEMORY_CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
NO_ROWS_LIMIT = 1_000_000


def locomo_turns(stem: str) -> list[ConversationTurn]:
    """The turns of ``<LOCOMO_DIR>/<stem>.json``; a missing data set FAILS the test, saying where."""
    from engram.benchmarks.locomo_reader import conversation_turns

    path = LOCOMO_DIR / f"{stem}.json"
    if not path.is_file():
        pytest.fail(f"LoCoMo conversation {path} is missing: the Trace e2e tests need ../shared/benchdata/locomo")
    return conversation_turns(json.loads(path.read_text(encoding="utf-8")), stem)


def worker_config(stack: StackInfo, root: Path, name: str, batch_max: int = 2000) -> EngramConfig:
    """A worker on the stand-ins with per-test topics (prefix ``name``), app id and graph. Dreaming is
    off: these tests compare the memory with the Trace's and facts' derivation alone (the dreaming
    tests check dreams through the broker)."""
    host, port = stack.require_falkordb()
    config = standin_config(
        stack, root, name, falkordb_host=host, falkordb_port=port, graph_name=f"e2e-{name}", batch_max=batch_max,
        dreaming=False,
    )  # fmt: skip
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    return config


def publish_turns(config: EngramConfig, turns: Iterable[ConversationTurn]) -> int:
    publisher = Publisher.for_config(config)
    for turn in turns:
        publisher.publish(config.topics.turns, turn["user_id"].encode(), TURN_CODEC.encode(turn))
    return publisher.flush()


@dataclass(frozen=True, slots=True)
class Progress:
    """What a worker's /metrics says it has done since it started."""

    ingested: int
    memory_events: int
    applied: dict[str, int]

    @property
    def caught_up(self) -> bool:
        return len(self.applied) == 2 and min(self.applied.values()) >= self.memory_events


def progress(worker: WorkerProcess, config: EngramConfig) -> Progress:
    text = worker.scrape() or ""
    return Progress(
        ingested=int(metric_value(text, "engram_ingest_messages_total", {"topic": config.topics.turns})),
        memory_events=int(metric_value(text, "engram_memory_events_total")),
        applied={
            sink: int(value)
            for sink in ("qdrant", "graph")
            if (value := metric_value(text, "engram_sink_applied_total", {"sink": sink}))
        },
    )


def wait_until(what: str, check: Callable[[], bool], timeout_s: float, state: Callable[[], object]) -> None:
    """Poll ``check``; on timeout FAIL with ``what`` and the last ``state()``."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"after {timeout_s:.0f}s still waiting for {what}; last state: {state()}")
        time.sleep(0.2)


def wait_ingested(worker: WorkerProcess, config: EngramConfig, turns: int, timeout_s: float = 60.0) -> Progress:
    """Until the worker has ingested ``turns`` turns and both sinks applied every memory event."""
    last: list[Progress] = [progress(worker, config)]

    def done() -> bool:
        last[0] = progress(worker, config)
        return last[0].ingested >= turns and last[0].caught_up

    wait_until(f"{turns} turns ingested and applied", done, timeout_s, lambda: last[0])
    return last[0]


def log_errors(path: Path, limit: int = 5) -> list[str]:
    """The first distinct error lines of a worker's log (why a restarted worker is stuck)."""
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
    except OSError:
        return []
    found = dict.fromkeys(line[:300] for line in lines if "Error" in line or "ERROR" in line)
    return list(found)[:limit]


def topic_memory(config: EngramConfig) -> list[MemoryEvent]:
    """engram.memory as the broker holds it, partition by partition in offset order."""
    return [MEMORY_CODEC.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.memory)]


def logged(config: EngramConfig, topic: str) -> list[LoggedEvent]:
    reader = eventlog_reader(config)
    return list(reader.read([topic])) if topic in reader.topics() else []


def offset_gaps(config: EngramConfig, topic: str) -> list[tuple[int, int, int]]:
    """(partition, last offset before, next offset logged) wherever the event log skips offsets."""
    events = logged(config, topic)
    return [
        (a["partition"], a["offset"], b["offset"])
        for a, b in zip(events, events[1:], strict=False)
        if a["partition"] == b["partition"] and b["offset"] != a["offset"] + 1
    ]


def logged_turns(config: EngramConfig) -> list[tuple[ConversationTurn, EventRef]]:
    """The event log's turns with their source coordinates, per partition in offset order."""
    return [
        (
            TURN_CODEC.decode(e["value"] or b""),
            {"topic": e["topic"], "partition": e["partition"], "offset": e["offset"]},
        )
        for e in logged(config, config.topics.turns)
    ]


def memory_items(config: EngramConfig) -> list[Record[MemoryEvent]]:
    """engram.memory from the worker's event log, as the store agent would stage it."""
    decode = MEMORY_CODEC.decode
    return [
        Record(e["topic"], e["partition"], e["offset"], e["timestamp_ms"], e["key"], decode(e["value"] or b""))
        for e in logged(config, config.topics.memory)
    ]


def upserted_nodes(events: Iterable[MemoryEvent]) -> Counter[str]:
    """How many NodeUpserted events each node id got."""
    out: Counter[str] = Counter()
    for event in events:
        kind, change = event["change"]
        if kind == NODE_UPSERTED:
            out[cast(NodeUpserted, change)["node_id"]] += 1
    return out


def removed_edges(events: Iterable[MemoryEvent]) -> list[tuple[str, str, str]]:
    """(type, src, dst) of every EdgeRemoved, in order."""
    out: list[tuple[str, str, str]] = []
    for event in events:
        kind, change = event["change"]
        if kind == EDGE_REMOVED:
            removed = cast(EdgeRemoved, change)
            out.append((removed["edge_type"], removed["src"], removed["dst"]))
    return out


def falkor(stack: StackInfo, graph: str) -> FalkorExecutor:
    host, port = stack.require_falkordb()
    executor = FalkorExecutor(FalkorConfig(host=host, port=port, graph=graph))
    executor.setup()
    return executor


def drop_graphs(stack: StackInfo, graphs: Iterable[str]) -> None:
    for graph in graphs:
        executor = falkor(stack, graph)
        executor.delete_graph()
        executor.close()


@dataclass(frozen=True, slots=True)
class StoreHashes:
    qdrant: str
    graph: str


def apply_to_fresh_stores(
    stack: StackInfo, items: Sequence[Record[MemoryEvent]], folder: Path, graph: str
) -> StoreHashes:
    """Apply ``items`` to an empty qdrant-edge folder and an empty FalkorDB graph; their hashes."""
    vectors = QdrantSink(EdgeVectorStore(folder))
    edges = GraphSink(falkor(stack, graph))
    vectors.setup()
    try:
        for item in items:
            vectors.add(item)
            edges.add(item)
        vectors.flush()
        edges.flush()
        return StoreHashes(vectors.content_hash(), edges.content_hash())
    finally:
        vectors.close()
        edges.close()


def stored_hashes(stack: StackInfo, folder: Path, graph: str) -> StoreHashes:
    """Content hashes of existing stores (the worker must be stopped: qdrant-edge locks its folder)."""
    vectors = QdrantSink(EdgeVectorStore(folder))
    edges = GraphSink(falkor(stack, graph))
    vectors.setup()
    try:
        return StoreHashes(vectors.content_hash(), edges.content_hash())
    finally:
        vectors.close()
        edges.close()


@dataclass(frozen=True, slots=True)
class GraphContent:
    """Every node and relationship of a graph by id: how many copies each id has, and its content."""

    nodes: Counter[str]
    edges: Counter[str]
    node_content: dict[str, tuple[tuple[str, ...], str]]  # id -> (sorted labels, properties as JSON)
    edge_content: dict[str, tuple[str, str, str, str]]  # id -> (type, source, target, properties as JSON)

    def nodes_without(self, label: str) -> dict[str, tuple[tuple[str, ...], str]]:
        return {k: v for k, v in self.node_content.items() if label not in v[0]}


def graph_content(stack: StackInfo, graph: str) -> GraphContent:
    executor = falkor(stack, graph)
    try:
        rows = executor.run(node_cypher.node_page(), {"after": "", "limit": NO_ROWS_LIMIT})
        ids = sorted({str(row["id"]) for row in rows})
        edge_rows = executor.run(edge_cypher.edges_from(), {"ids": ids}) if ids else []
    finally:
        executor.close()
    return GraphContent(
        nodes=Counter(str(row["id"]) for row in rows),
        edges=Counter(str(row["id"]) for row in edge_rows),
        node_content={str(row["id"]): (_labels(row["labels"]), _canonical(row["props"])) for row in rows},
        edge_content={
            str(row["id"]): (str(row["type"]), str(row["src"]), str(row["dst"]), _canonical(row["props"]))
            for row in edge_rows
        },
    )


def _labels(value: object) -> tuple[str, ...]:
    return tuple(sorted(str(label) for label in value)) if isinstance(value, list) else ()


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def missing(got: GraphContent, expected: GraphContent) -> dict[str, Counter[str]]:
    """What ``expected`` holds and ``got`` lacks: node counts by labels, edge counts by type."""
    return {
        "nodes": Counter("+".join(expected.node_content[n][0]) for n in set(expected.nodes) - set(got.nodes)),
        "edges": Counter(expected.edge_content[e][0] for e in set(expected.edges) - set(got.edges)),
    }


def copies_over_one(counts: Counter[str]) -> dict[str, int]:
    return {key: n for key, n in counts.items() if n != 1}
