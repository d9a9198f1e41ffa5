"""Chaos: SIGKILL the worker N times while turns stream through, then count what was lost.

Starts the embedded stack and a worker (dreaming off, batches of 10, so a kill lands mid-batch),
publishes ``--turns`` turns, and kills the worker (SIGKILL: no shutdown, no final commit) ``--kills``
times at random moments while it works, restarting it each time. The last worker runs until the
event log holds every turn and the graph stops changing. A clean run is then derived from the
logged turns in process (the worker's own steps, `streams.steps.derive_turns`) and applied to
empty stores. Compared, store by store:
- the event log: every published turn archived, none twice (``lost``/``duplicated`` turns);
- the graph store: node and edge ids lost, extra or held twice, and ids whose content differs;
- Qdrant: point ids lost or extra, and points whose vector or payload differ.
``mismatched`` counts ids present on both sides with different content, and ``where`` lists some.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from benchmarks.ingest import make_turns, texts
from schemas.codec import AvroCodec
from schemas.record import Record
from schemas.records import ConversationTurn
from sinks.graph.cypher import edges as edge_cypher
from sinks.graph.cypher import nodes as node_cypher
from sinks.graph.falkor import FalkorConfig, FalkorExecutor
from sinks.graph.sink import GraphSink
from sinks.qdrant.edge import EdgeVectorStore
from sinks.qdrant.sink import QdrantSink
from streams.admin import Publisher, ensure_topics
from streams.config import EngramConfig
from streams.demo import free_port
from streams.runner import WorkerProcess
from streams.sealing import eventlog_reader
from streams.steps import derive_turns

TURNS: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
Content = dict[str, str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo folder for the turns' texts")
    parser.add_argument("--seed", type=int, default=7)


def logged_turns(config: EngramConfig) -> list[Record[ConversationTurn]]:
    reader = eventlog_reader(config)
    if config.topics.turns not in reader.topics():
        return []
    return [Record(e["topic"], e["partition"], e["offset"], 0, e["key"], TURNS.decode(e["value"] or b""))
            for e in reader.read([config.topics.turns])]  # fmt: skip


def graph_content(executor: FalkorExecutor) -> tuple[Counter[str], Content]:
    """Copies per id, and each id's content, for every node and relationship (edges prefixed)."""
    rows = executor.run(node_cypher.node_page(), {"after": "", "limit": 10_000_000})
    ids = sorted({str(row["id"]) for row in rows})
    edges = executor.run(edge_cypher.edges_from(), {"ids": ids}) if ids else []
    copies: Counter[str] = Counter(str(r["id"]) for r in rows)
    copies.update(f"edge:{r['id']}" for r in edges)
    content = {str(r["id"]): json.dumps([_labels(r["labels"]), r["props"]], sort_keys=True, default=str)
               for r in rows}  # fmt: skip
    content |= {f"edge:{r['id']}": json.dumps([r["type"], r["src"], r["dst"], r["props"]], sort_keys=True, default=str)
                for r in edges}  # fmt: skip
    return copies, content


def _labels(value: object) -> list[str]:
    return sorted(str(label) for label in value) if isinstance(value, list) else []


def vector_content(folder: Path) -> Content:
    store = EdgeVectorStore(folder)
    try:
        return {f"{c}/{p.id}": json.dumps([[round(x, 5) for x in p.vector], p.payload], sort_keys=True, default=str)
                for c in store.collections() for p in store.scroll_all(c)}  # fmt: skip
    finally:
        store.close()


def compare(got: Content, expected: Content) -> dict[str, Any]:
    differ = sorted(k for k in got.keys() & expected.keys() if got[k] != expected[k])
    return {
        "lost": sorted(expected.keys() - got.keys()),
        "extra": sorted(got.keys() - expected.keys()),
        "differ": differ,
    }


def reference(config: EngramConfig, turns: list[Record[ConversationTurn]], root: Path, falkor: tuple[str, int]
              ) -> tuple[Content, Content, int]:  # fmt: skip
    """The clean run's graph and vector content (the logged turns derived in process, applied
    fresh), and how many MemoryEvents it derived."""
    events = derive_turns(turns, config.topics.memory)[0]
    items = [Record(config.topics.memory, 0, i, 0, None, e) for i, e in enumerate(events)]
    vectors = QdrantSink(EdgeVectorStore(root / "reference-qdrant"))
    executor = FalkorExecutor(FalkorConfig(*falkor, graph="chaos-reference"))
    graph = GraphSink(executor)
    vectors.setup()
    graph.setup()
    for item in items:
        vectors.add(item)
        graph.add(item)
    vectors.flush()
    graph.flush()
    vectors.close()
    return graph_content(executor)[1], vector_content(root / "reference-qdrant"), len(events)


def run_with_kills(config: EngramConfig, root: Path, args: argparse.Namespace, total: int) -> list[int]:
    """Kill at spread-out points of the run (once the log holds about i/(kills+1) of the turns, with
    jitter: the worker is then archiving, deriving and applying batches) and restart; returns how
    many turns the log held at each kill (all below ``total``: each landed mid-run)."""
    rng = random.Random(args.seed)  # noqa: S311 - kill timing, not security
    worker = WorkerProcess(config, root / "worker-0.log").start()
    at: list[int] = []
    step = max(1, total // (args.kills + 1))
    for kill in tqdm(range(args.kills), desc="kills", unit="kill", file=sys.stderr):
        target = min(total - 1, (kill + 1) * step + rng.randrange(-step // 3, step // 3 + 1))
        deadline = time.monotonic() + 60
        logged = len(logged_turns(config))
        while logged < target and time.monotonic() < deadline:  # the worker is taking turns: kill it now
            time.sleep(0.05)
            logged = len(logged_turns(config))
        if logged >= total:
            break
        worker.kill()
        at.append(logged)
        worker = WorkerProcess(config, root / f"worker-{kill + 1}.log").start()
    settle(config, worker, total)
    worker.stop()
    return at


def settle(config: EngramConfig, worker: WorkerProcess, total: int, timeout_s: float = 120.0) -> None:
    """Until every turn is logged and the graph's node count held still for 3 s."""
    host, port = config.falkordb_host or "", config.falkordb_port or 0
    executor = FalkorExecutor(FalkorConfig(host, port, graph=config.graph_name))
    executor.setup()
    deadline, last, still_since = time.monotonic() + timeout_s, -1, time.monotonic()
    while time.monotonic() < deadline:
        count = int(str(executor.run(node_cypher.count_nodes(), {})[0]["count"]))
        if count != last:
            last, still_since = count, time.monotonic()
        if len(logged_turns(config)) >= total and time.monotonic() - still_since > 3.0:
            return
        time.sleep(0.5)


def run(args: argparse.Namespace) -> dict[str, object]:
    from infra.config import StackConfig
    from infra.launcher import EmbeddedStack

    turns = make_turns(args.turns, args.users, texts(args.data))
    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-chaos-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack", qdrant=False)) as stack,
    ):
        host, port = stack.require_falkordb()
        config = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(), falkordb_host=host, falkordb_port=port,
            graph_name="chaos", app_id="engram-bench-chaos", partitions=2, data_dir=Path(tmp) / "data",
            web_port=free_port(), broker_profile="standin", batch_max=10, batch_within_s=0.1, dreaming=False,
        )  # fmt: skip
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        publisher = Publisher.for_config(config)
        for turn in turns:
            publisher.publish(config.topics.turns, turn["user_id"].encode(), TURNS.encode(turn))
        publisher.flush()
        kills_at = run_with_kills(config, Path(tmp), args, len(turns))
        logged = logged_turns(config)
        executor = FalkorExecutor(FalkorConfig(host, port, graph=config.graph_name))
        executor.setup()
        copies, got_graph = graph_content(executor)
        expected_graph, expected_vectors, events = reference(config, logged, Path(tmp), (host, port))
        got_vectors = vector_content(config.data_dir / "qdrant")
    positions = Counter((r.partition, r.offset) for r in logged)
    sent_ids, logged_ids = {t["turn_id"] for t in turns}, [r.value["turn_id"] for r in logged]
    graph, vectors = compare(got_graph, expected_graph), compare(got_vectors, expected_vectors)
    twice = sorted(i for i, n in copies.items() if n > 1)
    lost = len(sent_ids - set(logged_ids)) + len(graph["lost"]) + len(vectors["lost"])
    duplicated = sum(n - 1 for n in positions.values()) + len(twice) + len(graph["extra"]) + len(vectors["extra"])
    mismatched = len(graph["differ"]) + len(vectors["differ"])
    return {
        "kills": len(kills_at), "logged_turns_at_kills": kills_at, "turns": len(turns), "events": events,
        "lost": lost, "duplicated": duplicated,
        "mismatched": mismatched,
        "where": {"graph_lost": graph["lost"][:5], "graph_extra": graph["extra"][:5], "graph_twice": twice[:5],
                  "graph_differ": graph["differ"][:5], "vectors_lost": vectors["lost"][:5],
                  "vectors_extra": vectors["extra"][:5], "vectors_differ": vectors["differ"][:5]},
    }  # fmt: skip
