"""Chaos: SIGKILL the worker N times while turns stream through, then count what was lost.

Starts the embedded stack and a worker (dreaming off, batches of 10, so a kill lands mid-batch),
publishes ``--turns`` turns, and kills the worker (SIGKILL: no shutdown, no final commit) ``--kills``
times at random moments while it works, restarting it each time. Once the event log holds every
turn, a clean run is derived from the logged turns in process (the worker's own steps,
`streams.steps.derive_turns`) and applied to empty stores, and the last worker runs until the
graph equals it (or two minutes have passed: then the comparison says what differs). Compared, store by store:
- the event log: every published turn archived, none twice (``lost``/``duplicated`` turns);
- the graph store: node and edge ids lost, extra or held twice, and ids whose content differs;
- Qdrant: point ids lost or extra, and points whose vector or payload differ.
``mismatched`` counts ids present on both sides with different content, and ``where`` lists some.

``--workers 2`` runs two workers in one consumer group, each with its own data folder (event log,
Qdrant folder), and kills them in turn: while one is down the other takes over its partitions
(the broker rebalances), and the killed one comes back once the survivor has made progress. The
log is then the union of both workers' logs (a record both archived across a rebalance counts
once when both copies are equal, and as mismatched otherwise; twice in one log is a duplicate).
Qdrant's stand-in is a folder per process, so a partition that moved leaves its former owner's
copies of points behind: a point counts as present when some folder holds its expected content,
and the older copies are reported as ``stale_copies`` (a shared Qdrant server holds one copy).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
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
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1, help="2: kill one, the other takes over")
    parser.add_argument("--rate", type=float, default=0.0, help="turns/s streamed during the run (0: all at once)")


def logged_turns(config: EngramConfig) -> list[Record[ConversationTurn]]:
    reader = eventlog_reader(config)
    if config.topics.turns not in reader.topics():
        return []
    return [Record(e["topic"], e["partition"], e["offset"], 0, e["key"], TURNS.decode(e["value"] or b""))
            for e in reader.read([config.topics.turns])]  # fmt: skip


def union_log(configs: list[EngramConfig]) -> tuple[list[Record[ConversationTurn]], int, int]:
    """The turns the workers' logs hold, each position once, in position order; how many a log
    holds twice (duplicates); how many positions two logs hold with different content."""
    seen: dict[tuple[int, int], Record[ConversationTurn]] = {}
    twice = differ = 0
    for config in configs:
        within: Counter[tuple[int, int]] = Counter()
        for record in logged_turns(config):
            position = (record.partition, record.offset)
            within[position] += 1
            first = seen.setdefault(position, record)
            differ += within[position] == 1 and first is not record and first.value != record.value
        twice += sum(n - 1 for n in within.values())
    return [seen[p] for p in sorted(seen)], twice, differ


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


def vector_copies(folders: list[Path]) -> dict[str, list[str]]:
    """Each point's content in every folder that holds it."""
    copies: dict[str, list[str]] = {}
    for folder in folders:
        for point, content in vector_content(folder).items():
            copies.setdefault(point, []).append(content)
    return copies


def compare_copies(got: dict[str, list[str]], expected: Content) -> tuple[dict[str, Any], int]:
    """`compare` where a point is present when one of its copies is the expected one; returns the
    comparison and how many other (older) copies there were."""
    chosen = {p: expected[p] if expected.get(p) in c else c[0] for p, c in got.items()}
    stale = sum(len(c) - 1 for p, c in got.items() if expected.get(p) in c)
    return compare(chosen, expected), stale


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


def run_with_kills(
    configs: list[EngramConfig], root: Path, args: argparse.Namespace, total: int
) -> tuple[list[int], list[WorkerProcess]]:
    """Kill at spread-out points of the run (once the log holds about i/(kills+1) of the turns, with
    jitter: the workers are then archiving, deriving and applying batches) and restart; returns how
    many turns the log held at each kill (all below ``total``: each landed mid-run), and the
    workers, still running once the log holds every turn. With two workers they are killed in
    turn, and the killed one restarts once the other has taken over."""
    rng = random.Random(args.seed)  # noqa: S311 - kill timing, not security
    workers = [WorkerProcess(c, root / f"worker-{i}-0.log").start() for i, c in enumerate(configs)]
    at: list[int] = []
    step = max(1, total // (args.kills + 1))
    for kill in tqdm(range(args.kills), desc="kills", unit="kill", file=sys.stderr):
        target = min(total - 1, (kill + 1) * step + rng.randrange(-step // 3, step // 3 + 1))
        logged = wait_logged(configs, target, 60.0)
        if logged >= total:
            break
        victim = kill % len(workers)
        workers[victim].kill()
        at.append(logged)
        if len(workers) > 1:  # the survivor takes over the victim's partitions and goes on
            wait_logged(configs, min(total, logged + step // 4), 60.0)
        workers[victim] = WorkerProcess(configs[victim], root / f"worker-{victim}-{kill + 1}.log").start()
    wait_logged(configs, total, 120.0)
    return at, workers


def stream_turns(config: EngramConfig, turns: list[ConversationTurn], rate: float) -> threading.Thread:
    """Publish the turns, all at once (``rate`` 0) or ``rate`` a second on a thread while the run
    goes on (so that kills land while input still streams in); returns the publishing thread."""

    def publish() -> None:
        publisher = Publisher.for_config(config)
        started = time.monotonic()
        for n, turn in enumerate(turns):
            if rate > 0 and n / rate > time.monotonic() - started:
                publisher.flush()
                time.sleep(max(0.0, n / rate - (time.monotonic() - started)))
            publisher.publish(config.topics.turns, turn["user_id"].encode(), TURNS.encode(turn))
        publisher.flush()

    thread = threading.Thread(target=publish, name="chaos-turns", daemon=True)
    thread.start()
    if rate <= 0:
        thread.join()
    return thread


def wait_logged(configs: list[EngramConfig], target: int, timeout_s: float) -> int:
    """How many turns the logs hold once they hold ``target`` (or when ``timeout_s`` has passed)."""
    deadline = time.monotonic() + timeout_s
    logged = len(union_log(configs)[0])
    while logged < target and time.monotonic() < deadline:
        time.sleep(0.05)
        logged = len(union_log(configs)[0])
    return logged


def converge(executor: FalkorExecutor, expected: Content, timeout_s: float) -> tuple[Counter[str], Content]:
    """The graph's content once it equals the clean run's, or when ``timeout_s`` has passed (then
    the comparison says what differs). The workers are still running: after its last restart a
    worker recovers its tables and applies engram.memory again from its group's committed offset
    (rewriting nodes in place, older versions first), which no count or quiet moment shows the
    end of."""
    deadline = time.monotonic() + timeout_s
    while True:
        copies, content = graph_content(executor)
        if content == expected or time.monotonic() > deadline:
            return copies, content
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
        streaming = stream_turns(config, turns, args.rate)
        configs = [config] + [
            replace(config, data_dir=Path(tmp) / f"data-{i}", web_port=free_port()) for i in range(1, args.workers)
        ]
        kills_at, workers = run_with_kills(configs, Path(tmp), args, len(turns))
        streaming.join()
        logged, twice_logged, differ_logged = union_log(configs)
        expected_graph, expected_vectors, events = reference(config, logged, Path(tmp), (host, port))
        executor = FalkorExecutor(FalkorConfig(host, port, graph=config.graph_name))
        executor.setup()
        copies, got_graph = converge(executor, expected_graph, 120.0)
        time.sleep(2.0)  # the batch that completed the graph has applied Qdrant too (stores in one commit)
        for worker in workers:
            worker.stop()
        got_vectors = vector_copies([c.data_dir / "qdrant" for c in configs])
    sent_ids, logged_ids = {t["turn_id"] for t in turns}, [r.value["turn_id"] for r in logged]
    graph = compare(got_graph, expected_graph)
    vectors, stale = compare_copies(got_vectors, expected_vectors)
    twice = sorted(i for i, n in copies.items() if n > 1)
    lost = len(sent_ids - set(logged_ids)) + len(graph["lost"]) + len(vectors["lost"])
    duplicated = twice_logged + len(twice) + len(graph["extra"]) + len(vectors["extra"])
    mismatched = differ_logged + len(graph["differ"]) + len(vectors["differ"])
    return {
        "workers": args.workers, "kills": len(kills_at), "logged_turns_at_kills": kills_at, "turns": len(turns),
        "events": events, "lost": lost, "duplicated": duplicated, "mismatched": mismatched, "stale_copies": stale,
        "where": {"graph_lost": graph["lost"][:5], "graph_extra": graph["extra"][:5], "graph_twice": twice[:5],
                  "graph_differ": graph["differ"][:5], "vectors_lost": vectors["lost"][:5],
                  "vectors_extra": vectors["extra"][:5], "vectors_differ": vectors["differ"][:5]},
    }  # fmt: skip
