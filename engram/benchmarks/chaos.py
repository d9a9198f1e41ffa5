"""Chaos: SIGKILL the worker N times while turns, code changes and requests stream through, then
count what was lost.

Starts the embedded stack and a worker (dreaming on, batches of 10, so a kill lands mid-batch),
publishes ``--turns`` turns (a minute apart in event time, so sessions go idle and dreams fire) with
``--code`` code changes and ``--requests`` context requests among them, and kills the worker
(SIGKILL: no shutdown, no final commit) ``--kills`` times at random moments while it works,
restarting it each time. Once every request is answered and the event log holds every record of
engram.memory the broker holds (``log_complete``; a quiet log is no proof: after a kill the worker
recovers its tables for seconds while the tail waits), a clean run is derived from the logged inputs
in process (`benchmarks.chaos_reference`: the worker's own steps, dreaming included) and applied to
empty stores, and the last worker runs until the graph equals it (or the wait, two minutes plus a
tenth of a second per turn, has passed: then the comparison says what differs). Compared, store by
store:
- the event log: every published input archived, none twice (``lost``/``duplicated``);
- the graph store: node and edge ids lost, extra or held twice, and ids whose content differs
  (turns' episodes, facts, dreaming's products, the code graph);
- Qdrant: point ids lost or extra, and points whose vector or payload differ;
- the tables, from their changelogs: trace state, code state, facts state and dream state (keys
  lost or extra, and keys whose state differs);
- the view (one worker): the content hash of the last worker's in-process view, restored from its
  snapshot and the log after it at each restart (sinks/viewstate.py), against a view fed its
  event log's engram.memory up to the offsets the view reports (``view_matches_log``; a mismatch
  counts once in ``mismatched``); ``--view-snapshot-events`` small makes every restart load one;
- answered requests: a request never answered is lost. A request compiled again after a kill is
  answered again (Kafka delivery is at least once): ``answers_redelivered`` counts those, and the
  client SDK keeps the first answer per request id.
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
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engram.benchmarks.chaos_reference import CleanRun, Inputs, Tables, changelog_tables, clean_run, logged
from engram.benchmarks.chaos_traffic import CODE, TURNS, make_traffic, stream
from engram.benchmarks.client_held import page
from engram.processors.dreaming.records import held
from engram.processors.retrieval.applied import AppliedOffsets
from engram.processors.retrieval.digest import view_content_hash
from engram.processors.retrieval.view import MemoryView
from engram.processors.tokens import default_token_counter
from engram.processors.trace.records import held as trace_held
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import CompiledContext, MemoryEvent
from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
from engram.sinks.graph.sink import GraphSink
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.sink import QdrantSink
from engram.streams.admin import TopicCounter, ensure_topics, read_topic
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.restore import logged_memory
from engram.streams.runner import WorkerProcess
from engram.streams.sealing import eventlog_reader

MEMORY: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
COMPILED: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
TABLES = ("trace-state", "code-state", "facts-state", "dream-state")
Content = dict[str, str]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--turns", type=int, default=400)
    parser.add_argument("--users", type=int, default=4)
    parser.add_argument("--code", type=int, default=None, help="code changes among the turns (default: turns/10)")
    parser.add_argument("--requests", type=int, default=None, help="context requests (default: turns/15)")
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo folder for the turns' texts")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--workers", type=int, choices=(1, 2), default=1, help="2: kill one, the other takes over")
    parser.add_argument(
        "--rate",
        type=float,
        default=0.0,
        help="messages/s streamed during the run (0: all at once); with two workers a kill waits for the "
        "survivor to take over (about 15 s), so for every kill to land mid-run give inputs/rate > kills x 17 s",
    )
    parser.add_argument("--no-dreaming", dest="dreaming", action="store_false", help="the workers do not dream")
    parser.add_argument("--view-snapshot-events", type=int, default=EngramConfig().view_snapshot_events,
                        help="the workers' ENGRAM_VIEW_SNAPSHOT_EVENTS (a small value: kills land between "
                        "snapshots and restarts load them)")  # fmt: skip


def logged_inputs(configs: list[EngramConfig]) -> tuple[Inputs, int, list[str]]:
    """The inputs the workers' logs hold (turns, code changes, engram.memory), how many positions
    a log holds twice, and the positions two logs hold with different content (inputs only)."""
    topics = configs[0].topics
    turns, code = logged(configs, topics.turns, TURNS), logged(configs, topics.code, CODE)
    memory = logged(configs, topics.memory, MEMORY)
    inputs = Inputs(turns.records, code.records, memory.records, topics.requests)
    return inputs, turns.twice + code.twice, turns.differing + code.differing


def logged_count(configs: list[EngramConfig]) -> int:
    topics = configs[0].topics
    return len(logged(configs, topics.turns, TURNS).records) + len(logged(configs, topics.code, CODE).records)


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


def reference(run: CleanRun, root: Path, falkor: tuple[str, int]) -> tuple[Content, Content]:
    """The clean run's graph and vector content: its events applied, in order, to empty stores."""
    items = [Record("engram.memory", 0, i, 0, None, e) for i, e in enumerate(run.events)]
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
    return graph_content(executor)[1], vector_content(root / "reference-qdrant")


def table_content(config: EngramConfig) -> Tables:
    """The workers' tables as their changelogs end."""
    names = TABLES if config.dreaming else TABLES[:-1]
    topics = [f"{config.app_id}-{name}-changelog" for name in names]
    messages = [m for topic in topics for m in read_topic(config.bootstrap_servers, topic)]
    return changelog_tables(messages, names, config.app_id)


def compare_tables(got: Tables, expected: Tables) -> dict[str, Any]:
    """`compare` over every table's keys (``table/key``), each state as canonical JSON. The dream
    state's ``applied`` (engram.memory offsets seen) and ``echoed`` (the last ids that came back,
    in the order the log brought them back) are left out: the clean run has its own log."""

    def flat(tables: Tables) -> Content:
        return {f"{name}/{key}": json.dumps(_comparable(name, state), sort_keys=True)
                for name, rows in tables.items() for key, state in _rows(name, rows).items()}  # fmt: skip

    return compare(flat(got), flat({name: expected.get(name, {}) for name in got}))


def _rows(table: str, rows: dict[str, Any]) -> dict[str, Any]:
    """A table's records; the dream and Trace states' as the states they hold (which slot holds a
    part depends on the history of writes, processors/parts.py)."""
    if table == "dream-state":
        return held(rows)
    return trace_held(rows) if table == "trace-state" else rows


def _comparable(table: str, state: Any) -> Any:
    if table == "dream-state" and isinstance(state, dict):
        return {k: v for k, v in state.items() if k not in ("applied", "echoed")}
    return state


def answers(config: EngramConfig) -> Counter[str]:
    """How many compiled contexts the answer topic holds per request id."""
    return Counter(COMPILED.decode(m.value() or b"")["request_id"]
                   for m in read_topic(config.bootstrap_servers, config.topics.compiled))  # fmt: skip


def run_with_kills(
    configs: list[EngramConfig], root: Path, args: argparse.Namespace, total: int, workers: list[WorkerProcess]
) -> list[int]:
    """Kill at spread-out points of the run (once the log holds about i/(kills+1) of the turns and
    code changes, with jitter: the workers are then archiving, deriving and applying batches) and
    restart; returns how many the log held at each kill (all below ``total``: each landed mid-run).
    ``workers`` holds the running workers (the caller stops them), still running once the log holds
    every input. With two workers they are killed in turn, and the killed one restarts once the
    other has taken over."""
    rng = random.Random(args.seed)  # noqa: S311 - kill timing, not security
    for i, c in enumerate(configs):
        workers.append(WorkerProcess(c, root / f"worker-{i}-0.log").start())
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
    return at


def wait_logged(configs: list[EngramConfig], target: int, timeout_s: float) -> int:
    """How many turns and code changes the logs hold once they hold ``target`` (or when
    ``timeout_s`` has passed)."""
    deadline = time.monotonic() + timeout_s
    count = logged_count(configs)
    while count < target and time.monotonic() < deadline:
        time.sleep(0.05)
        count = logged_count(configs)
    return count


def settle(configs: list[EngramConfig], requests: set[str], timeout_s: float) -> tuple[Counter[str], bool]:
    """Once every request is answered and the workers' logs hold every record the broker holds of
    engram.memory, unchanged for three seconds (or when ``timeout_s`` has passed): the answers per
    request id, and whether the logs were complete. A quiet log alone is no end: after a kill the
    group rebalances and the tables recover for seconds while engram.memory's tail waits unread,
    and a clean run derived from a partial log would place the unread inputs wrongly."""
    deadline = time.monotonic() + timeout_s
    answered = answers(configs[0])
    while not requests <= answered.keys() and time.monotonic() < deadline:
        time.sleep(0.5)
        answered = answers(configs[0])
    counter = TopicCounter(configs[0].bootstrap_servers, configs[0].topics.memory)
    try:
        held, since = -1, time.monotonic()
        while time.monotonic() - since < 3.0 and time.monotonic() < deadline:
            now = memory_held(configs, counter)
            held, since = now, since if now == held and now >= 0 else time.monotonic()
            time.sleep(0.5)
    finally:
        counter.close()
    return answers(configs[0]), held >= 0 and time.monotonic() - since >= 3.0


def memory_held(configs: list[EngramConfig], counter: TopicCounter) -> int:
    """How many records of engram.memory the workers' logs hold, or -1 while the broker holds
    more or ``counter`` has not reached its end (the stand-in's watermarks are not its end)."""
    at_end = counter.poll(2.0)
    in_logs = Counter(partition for partition, _ in logged_positions(configs, configs[0].topics.memory))
    return sum(in_logs.values()) if at_end and in_logs == counter.counts else -1


def logged_positions(configs: list[EngramConfig], topic: str) -> set[tuple[int, int]]:
    """The (partition, offset) positions of ``topic`` the workers' logs hold (nothing decoded)."""
    held: set[tuple[int, int]] = set()
    for config in configs:
        reader = eventlog_reader(config)
        if topic in reader.topics():
            held.update((entry["partition"], entry["offset"]) for entry in reader.read([topic]))
    return held


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


def view_matches_log(config: EngramConfig) -> bool:
    """Whether the running worker's view hashes as a fresh view fed its event log's engram.memory
    up to the offsets the view reports having applied."""
    shown = page(config, "/view?digest=1")
    if shown is None:
        return False
    upto = {int(partition): int(next_offset) for partition, next_offset in shown["applied"]["memory"].items()}
    fresh = MemoryView(token_counter=default_token_counter())  # the worker's: a node's tokens when its event has none
    fresh.apply(r.value for r in logged_memory(config, TopicCodecs.for_config(config), AppliedOffsets())
                if r.offset < upto.get(r.partition, 0))  # fmt: skip
    return bool(view_content_hash(fresh) == shown["digest"])


def run(args: argparse.Namespace) -> dict[str, object]:
    from engram.infra.config import StackConfig
    from engram.infra.launcher import EmbeddedStack

    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-chaos-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack", qdrant=False)) as stack,
    ):
        host, port = stack.require_falkordb()
        config = EngramConfig(
            bootstrap_servers=stack.require_bootstrap_servers(), falkordb_host=host, falkordb_port=port,
            graph_name="chaos", app_id="engram-bench-chaos", partitions=2, data_dir=Path(tmp) / "data",
            web_port=free_port(), broker_profile="standin", batch_max=10, batch_within_s=0.1,
            dreaming=getattr(args, "dreaming", True),
            view_snapshot_events=getattr(args, "view_snapshot_events", EngramConfig().view_snapshot_events),
        )  # fmt: skip
        traffic = make_traffic(args, config)
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        streaming = stream(config, traffic, args.rate)
        configs = [config] + [
            replace(config, data_dir=Path(tmp) / f"data-{i}", web_port=free_port()) for i in range(1, args.workers)
        ]
        workers: list[WorkerProcess] = []
        try:
            kills_at = run_with_kills(configs, Path(tmp), args, traffic.total, workers)
            streaming.join()
            wait_s = 120.0 + args.turns / 10  # a worker restarted often recovers its tables often
            answered, settled = settle(configs, {r["request_id"] for r in traffic.requests}, wait_s)
            inputs, twice_logged, differ_logged = logged_inputs(configs)
            clean = clean_run(inputs, config)
            expected_graph, expected_vectors = reference(clean, Path(tmp), (host, port))
            executor = FalkorExecutor(FalkorConfig(host, port, graph=config.graph_name))
            executor.setup()
            copies, got_graph = converge(executor, expected_graph, wait_s)
            time.sleep(2.0)  # the batch that completed the graph has applied Qdrant too (stores in one commit)
            view_matches = view_matches_log(config) if args.workers == 1 else None
        finally:
            for worker in workers:
                worker.stop()
        got_vectors = vector_copies([c.data_dir / "qdrant" for c in configs])
        tables = compare_tables(table_content(config), clean.tables)
    sent = {t["turn_id"] for t in traffic.turns} | {c["change_id"] for c in traffic.code}
    held = {r.value["turn_id"] for r in inputs.turns} | {r.value["change_id"] for r in inputs.code}
    unanswered = sorted({r["request_id"] for r in traffic.requests} - answered.keys())
    graph = compare(got_graph, expected_graph)
    vectors, stale = compare_copies(got_vectors, expected_vectors)
    twice = sorted(i for i, n in copies.items() if n > 1)
    lost = len(sent - held) + len(unanswered) + sum(len(c["lost"]) for c in (graph, vectors, tables))
    duplicated = twice_logged + len(twice) + sum(len(c["extra"]) for c in (graph, vectors, tables))
    mismatched = len(differ_logged) + sum(len(c["differ"]) for c in (graph, vectors, tables))
    mismatched += int(view_matches is False)
    where = {f"{store}_{kind}": found[kind][:5] for store, found in (("graph", graph), ("vectors", vectors),
             ("tables", tables)) for kind in ("lost", "extra", "differ")}  # fmt: skip
    return {
        "workers": args.workers, "kills": len(kills_at), "logged_inputs_at_kills": kills_at,
        "turns": len(traffic.turns), "code_changes": len(traffic.code), "requests": len(traffic.requests),
        "events": len(clean.events), "dream_events": clean.dreams, "answered": len(answered),
        "answers_redelivered": sum(n - 1 for n in answered.values()), "log_complete": settled,
        "lost": lost, "duplicated": duplicated, "mismatched": mismatched, "stale_copies": stale,
        "view_matches_log": view_matches,
        "where": {**where, "graph_twice": twice[:5], "unanswered": unanswered[:5], "log_differ": differ_logged[:5]},
    }  # fmt: skip
