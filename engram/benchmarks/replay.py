"""Replay: the event log rebuilds every store, twice, to the same content.

The log is ``--log DIR`` (a worker's event log; its engram.memory is replayed) or, without it, one
built here: ``--turns`` turns (LoCoMo texts with ``--data``) derived as a worker derives them (the
Trace, then the facts step: `streams.steps.derive_turns`) and appended to a fresh event log as
engram.memory. Its MemoryEvents are then read back from the log and applied to empty stores twice,
the second time in other batch sizes: the in-process view, the graph engine, Qdrant (qdrant-edge),
the graph store (FalkorDB, started through `infra/`), and the facts table (the facts step over the
replayed memory). Each store's content hash from both replays is printed, and whether they agree.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from tqdm import tqdm

from engram.benchmarks.ingest import make_turns, texts
from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.digest import view_content_hash
from engram.processors.retrieval.view import MemoryView
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import MemoryEvent
from engram.sinks.base import BatchingSink, SinkConfig
from engram.sinks.eventlog import EventLogReader, EventLogSink, reader_keys
from engram.sinks.eventlog.reader import as_record
from engram.streams.agents.ingest import group_by_key
from engram.streams.follow import decoded
from engram.streams.steps import FactsStep, derive_turns

MEMORY = "engram.memory"
CODEC: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--log", type=Path, default=None, help="an event log folder to replay (default: build one)")
    parser.add_argument("--turns", type=int, default=2000, help="turns to derive when building the log")
    parser.add_argument("--users", type=int, default=20, help="users the turns are spread over")
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo folder for the turns' texts")
    parser.add_argument("--batches", type=int, nargs=2, default=[500, 37], help="sink batch size of each replay")


def build_log(folder: Path, args: argparse.Namespace) -> int:
    """Derive MemoryEvents from turns and append them to a fresh event log as engram.memory."""
    turns = make_turns(args.turns, args.users, texts(args.data))
    records = [Record("engram.turns", 0, i, 0, t["user_id"].encode(), t) for i, t in enumerate(turns)]
    events, _ = derive_turns(records, MEMORY)
    sink = EventLogSink(folder)
    sink.setup()
    for offset, event in enumerate(events):
        sink.add(Record(MEMORY, 0, offset, event["event_time_ms"], event["key"].encode(), CODEC.encode(event)))
    sink.flush()
    sink.close()
    return len(events)


def read_memory(folder: Path) -> list[Record[MemoryEvent]]:
    """The log's MemoryEvents; a worker's sealed log is opened with the keys beside it, and the
    records of erased subjects are left out, as a rebuild after an erasure leaves them out."""
    reader = EventLogReader(folder, reader_keys(folder))
    if MEMORY not in reader.topics():
        return []
    return decoded(CODEC, [as_record(event) for event in reader.read([MEMORY])])


def _sink_hash(
    sink: BatchingSink[MemoryEvent], memory: Sequence[Record[MemoryEvent]], hashing: Callable[[], str]
) -> str:
    for record in memory:
        sink.add(record)
    sink.flush()
    return hashing()


def facts_hash(memory: Sequence[Record[MemoryEvent]]) -> str:
    step = FactsStep()
    writes, _ = step.process({}, group_by_key(step, memory))
    states = {w.key: w.state for w in writes}
    return hashlib.sha256(json.dumps(states, sort_keys=True, default=str).encode()).hexdigest()


def replay(memory: Sequence[Record[MemoryEvent]], root: Path, batch: int, falkor: tuple[str, int]) -> dict[str, str]:
    """One replay of ``memory`` into empty stores; the content hash of each."""
    from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
    from engram.sinks.graph.sink import GraphSink
    from engram.sinks.qdrant.edge import EdgeVectorStore
    from engram.sinks.qdrant.sink import QdrantSink

    events = [record.value for record in memory]
    view = MemoryView()
    engine = GraphEngine(vectors=view.node_vectors)
    for start in range(0, len(events), batch):
        view.apply(events[start : start + batch])
        engine.apply(events[start : start + batch])
    config = SinkConfig(max_batch=batch)
    qdrant = QdrantSink(EdgeVectorStore(root / "qdrant"), sink_config=config)
    qdrant.setup()
    graph = GraphSink(FalkorExecutor(FalkorConfig(*falkor, graph=f"replay-{root.name}")), config)
    graph.setup()
    return {
        "view_nodes": str(len(view)),
        "graph_engine_nodes": str(sum(1 for row in range(len(engine.store)) if engine.store.alive[row])),
        "view": view_content_hash(view),
        "graph_engine": engine.store.content_hash(),
        "qdrant": _sink_hash(qdrant, memory, qdrant.content_hash),
        "graph": _sink_hash(graph, memory, graph.content_hash),
        "facts": facts_hash(memory),
    }


def run(args: argparse.Namespace) -> dict[str, object]:
    from engram.infra.config import StackConfig
    from engram.infra.launcher import EmbeddedStack

    with (
        tempfile.TemporaryDirectory(prefix="engram-bench-replay-") as tmp,
        EmbeddedStack(StackConfig(root=Path(tmp) / "stack", kafka=False, qdrant=False)) as stack,
    ):
        log = args.log
        built = 0
        if log is None:
            log = Path(tmp) / "eventlog"
            built = build_log(log, args)
        memory = read_memory(log)
        if not memory:
            print(f"no {MEMORY} events in {log}", file=sys.stderr)
            return {"events": 0, "error": f"no {MEMORY} events in the log"}
        hashes = []
        for i, batch in enumerate(
            tqdm(args.batches, desc="replays", unit="replay", file=sys.stderr, disable=args.json)
        ):
            started = time.perf_counter()
            hashes.append((replay(memory, Path(tmp) / f"replay-{i}", batch, stack.require_falkordb()),
                           time.perf_counter() - started))  # fmt: skip
    (first, first_s), (second, second_s) = hashes
    sizes = {}
    for name in ("view_nodes", "graph_engine_nodes"):
        sizes[name] = int(first.pop(name))
        second.pop(name)
    stores = {name: {"first": first[name], "second": second[name], "equal": first[name] == second[name]}
              for name in first}  # fmt: skip
    return {
        "events": len(memory), "built_log": bool(built), "batches": list(args.batches), "stores": stores, **sizes,
        "all_equal": all(s["equal"] for s in stores.values()),
        "replay_s": [round(first_s, 2), round(second_s, 2)],
    }  # fmt: skip
