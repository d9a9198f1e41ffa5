"""RAM by structure: the bytes a worker's structures keep per turn as a history grows, in process.

Issue 50: a worker's RAM grows with every turn it has seen, and ``engram bench ingest`` measures the
whole process (``worker_rss_mb``), not which structure holds what. This bench runs ``--turns`` turns
round-robin over ``--users`` users (``bench ingest``'s turns, a user's turns ``--user-gap-ms``
apart) through the worker's own steps in one process, batch by batch as the memory agent takes them,
each reader decoding its own copy of the memory events from Avro as it does from engram.memory:
the Trace (`streams.steps.TraceStep`), the facts step, the dream step (`streams.dream_step.DreamStep`,
its events coming back as input after each batch, as through engram.memory), the compile path's
`MemoryView` and `GraphEngine` (fed the same memory events), and the tables each step writes (the
values a table's cache holds: `streams.tablestore`).

It measures each structure's size (`reached_bytes`: the objects it reaches, numpy arrays with the
buffers they own, an object reached from two structures counted once, with the first) after a
third of the turns and at the end, and reports the difference per turn: ``bytes_per_turn`` by structure,
and by part for the view and the graph engine's store. Fixed costs (the embedding model, the token
counter, the rule engine) cancel out in the difference; what remains is what grows with history,
which a bounded worker must not keep. ``total_mb`` is every structure at the end. No broker, no
sinks: the process's own structures only (Faust, the clients and their buffers come on top).
"""

from __future__ import annotations

import argparse
import gc
import sys
import types
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import numpy as np
from tqdm import tqdm

from engram.benchmarks.ingest import make_turns, texts
from engram.benchmarks.qdrant_lists import capped_view
from engram.processors.dreaming.dream import Dreamer
from engram.processors.graph.engine import GraphEngine
from engram.processors.retrieval.view import MemoryView
from engram.processors.tokens import default_token_counter
from engram.processors.trace import TraceBuilder
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import KeyedProcessor, apply_writes, group_by_key
from engram.streams.commit import JsonState
from engram.streams.dream_step import DreamStep
from engram.streams.steps import FactsStep, TraceStep

TURNS_TOPIC: Final = "engram.turns"
MEMORY_TOPIC: Final = "engram.memory"
MEMORY_CODEC: Final[AvroCodec[MemoryEvent]] = AvroCodec("MemoryEvent")
BATCH: Final = 1_000  # turns a batch, as the agents take them (streams/config.py batch_max is 2,000 records)
FIRST_SHARE: Final = 3  # the first measurement after a third of the turns


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--turns", type=int, default=30_000, help="turns in all")
    parser.add_argument("--users", type=int, default=1_000, help="users the turns go round")
    parser.add_argument("--user-gap-ms", type=int, default=50_000, help="event time between a user's turns")
    parser.add_argument("--data", type=Path, default=None, help="a folder of LoCoMo files to take texts from")
    parser.add_argument(
        "--view-hot-turns", type=int, default=None, metavar="TURNS",
        help="give the view a store (qdrant-edge, in a temporary folder) and cap its users' hot sets at TURNS "
        "(ENGRAM_VIEW_HOT_TURNS): dormant nodes and the turns past the cap leave RAM, as in a worker",
    )  # fmt: skip


@dataclass
class _Worker:
    """A worker's structures, fed as its agents feed them."""

    trace: TraceStep = field(default_factory=lambda: TraceStep(TraceBuilder()))
    facts: FactsStep = field(default_factory=FactsStep)
    dream: DreamStep = field(default_factory=lambda: DreamStep(Dreamer(count=default_token_counter().count)))
    view: MemoryView = field(default_factory=MemoryView)
    tables: dict[str, dict[str, JsonState]] = field(default_factory=lambda: {"trace": {}, "facts": {}, "dream": {}})
    graph: GraphEngine = field(init=False)
    echoes: list[bytes] = field(default_factory=list)
    offsets: dict[str, int] = field(default_factory=lambda: {TURNS_TOPIC: 0, MEMORY_TOPIC: 0})

    def __post_init__(self) -> None:
        self.graph = GraphEngine(vectors=self.view.node_vectors)  # as the worker builds it (streams/restore.py)

    def take(self, turns: Sequence[ConversationTurn]) -> None:
        derived = _wire(self._step("trace", self.trace, self._records(TURNS_TOPIC, turns)))
        decided = _wire(self._step("facts", self.facts, self._records(MEMORY_TOPIC, _decoded(derived))))
        memory = [*self.echoes, *derived, *decided]  # the dreams of the batch before come back first
        self.echoes = _wire(self._step("dream", self.dream, self._records(MEMORY_TOPIC, _decoded(memory))))
        applied = _decoded(memory)  # the compile thread's own copies, fed to the view and the graph
        self.view.apply(applied)
        self.graph.apply(applied)

    def _records(self, topic: str, values: Sequence[Any]) -> list[Record[Any]]:
        start = self.offsets[topic]
        self.offsets[topic] = start + len(values)
        return [Record(topic, 0, start + i, 0, None, value) for i, value in enumerate(values)]

    def _step(self, table: str, step: KeyedProcessor, records: list[Record[Any]]) -> list[MemoryEvent]:
        writes, events = step.process(self.tables[table], group_by_key(step, records))
        apply_writes(self.tables[table], writes)
        return events

    def structures(self) -> dict[str, object]:
        """Each structure, in the order sizes are assigned (an object two reach counts for the first)."""
        return {
            "view": self.view,
            "graph_engine": self.graph,
            "trace_step": self.trace,
            "facts_step": self.facts,
            "dream_step": self.dream,
            "trace_table": self.tables["trace"],
            "facts_table": self.tables["facts"],
            "dream_table": self.tables["dream"],
        }


def _wire(events: Sequence[MemoryEvent]) -> list[bytes]:
    """Events as engram.memory carries them: each reader decodes its own copy (its strings are its
    own, as in a worker: a structure holding one keeps it)."""
    return [MEMORY_CODEC.encode(event) for event in events]


def _decoded(wire: Sequence[bytes]) -> list[MemoryEvent]:
    return [MEMORY_CODEC.decode(data) for data in wire]


_NOT_DATA: Final = (type, types.ModuleType, types.FunctionType, types.BuiltinFunctionType, types.MethodType)


def reached_bytes(roots: Iterable[object]) -> list[int]:
    """The bytes of what each root reaches and no earlier root did (`sys.getsizeof` of each object,
    through `gc.get_referents`; a numpy array with the buffer it owns, a view without its base's).
    Classes, modules and functions are code, not data: not counted and not walked. pympler's
    ``asizesof`` does this too, but it sizes every numpy array by the first one it meets, and a
    view met first fails it (a negative base size)."""
    seen: set[int] = set()
    out: list[int] = []
    for root in roots:
        total, stack = 0, [root]
        while stack:
            obj = stack.pop()
            if id(obj) in seen or isinstance(obj, _NOT_DATA):
                continue
            seen.add(id(obj))
            if isinstance(obj, np.ndarray):  # its size holds the buffer it owns; a view's is its base's
                total += sys.getsizeof(obj)
                if obj.base is not None:
                    stack.append(obj.base)
                continue
            total += sys.getsizeof(obj)
            if not isinstance(obj, (str, bytes, int, float, bool)):
                stack.extend(gc.get_referents(obj))
        out.append(total)
    return out


def _parts(obj: object) -> dict[str, object]:
    """An object's attributes (slots or dict), to size them apart."""
    names = getattr(type(obj), "__slots__", ()) or vars(obj)
    return {name: getattr(obj, name) for name in names if hasattr(obj, name)}


def sizes(worker: _Worker) -> dict[str, dict[str, int]]:
    """Bytes of each structure, and of the parts of the view and the graph engine's store."""
    gc.collect()
    whole = worker.structures()
    out = {"structures": dict(zip(whole, reached_bytes(whole.values()), strict=True))}
    view = {k: v for k, v in _parts(worker.view).items() if k not in ("embedder", "_count")}
    out["view"] = dict(zip(view, reached_bytes(view.values()), strict=True))
    store = _parts(worker.graph.store)
    out["graph_store"] = dict(zip(store, reached_bytes(store.values()), strict=True))
    return out


def _per_turn(early: Mapping[str, int], late: Mapping[str, int], turns: int) -> dict[str, float]:
    grown = {k: (late[k] - early.get(k, 0)) / turns for k in late}
    return {k: round(v, 1) for k, v in sorted(grown.items(), key=lambda kv: -kv[1])}


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.turns < FIRST_SHARE * BATCH or args.users < 1:
        msg = f"--turns must be at least {FIRST_SHARE * BATCH} and --users at least 1"
        raise SystemExit(msg)
    turns = make_turns(args.turns, args.users, texts(args.data), gap_ms=max(1, args.user_gap_ms // args.users))
    if args.view_hot_turns is None:
        return _measured(args, turns, _Worker())
    with capped_view(args.view_hot_turns) as view:  # as a worker keeps it: a store, and the cap
        return _measured(args, turns, _Worker(view=view))


def _measured(args: argparse.Namespace, turns: Sequence[ConversationTurn], worker: _Worker) -> dict[str, Any]:
    first_at = (args.turns // FIRST_SHARE) // BATCH * BATCH
    early: dict[str, dict[str, int]] = {}
    for start in tqdm(range(0, len(turns), BATCH), desc="turns", unit="batch", file=sys.stderr, disable=args.json):
        worker.take(turns[start : start + BATCH])
        if start + BATCH == first_at:
            early = sizes(worker)
    late = sizes(worker)
    grown = args.turns - first_at
    return {
        "turns": args.turns,
        "users": args.users,
        "measured_turns": [first_at, args.turns],
        "nodes": len(worker.view),
        "edges": sum(1 for _ in worker.view.edges()),
        "bytes_per_turn": _per_turn(early["structures"], late["structures"], grown),
        "bytes_per_turn_total": round(sum(late["structures"].values()) - sum(early["structures"].values())) // grown,
        "view_bytes_per_turn": _per_turn(early["view"], late["view"], grown),
        "graph_store_bytes_per_turn": _per_turn(early["graph_store"], late["graph_store"], grown),
        "total_mb": round(sum(late["structures"].values()) / 2**20, 1),
        "method": "reached_bytes after a third of the turns and at the end; the difference per turn",
        "texts": "LoCoMo turns" if args.data is not None else "bench ingest's synthetic texts",
        "view_hot_turns": args.view_hot_turns,
        "view_nodes_in_ram": worker.view.held_bytes(dormant=False)[0],
    }
