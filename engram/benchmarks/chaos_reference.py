"""The clean run a chaos run is compared with: the same inputs, derived in one process, no kills.

The inputs are what the workers' event logs hold:
- turns and code changes, derived again here by the worker's own steps (the Trace, the code graph);
- what compiles added to engram.memory (fact accesses, re-awakenings). Those depend on when each
  request was compiled (on what memory held then), so no clean run reproduces them: they are
  inputs of the memory pipeline, taken as logged, each event once.

engram.memory's order is the only thing the memory agent's output depends on (streams/dream_step.py),
so the clean run follows it: per partition, the inputs go in the order the log first holds an event
they caused, and the memory agent's steps run on each in turn, as a batch of its own (the facts step,
then the dream step with the facts step's decisions in place), and the dreams it makes come back
as their echoes do. A redelivered input, later in the log, is not an input again. The result is
every event in the order the stores apply it, and the final tables (trace, code, facts and dream
state), which the workers' changelogs are compared with.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from engram.processors.dreaming.dream import Dreamer
from engram.processors.tokens import default_token_counter
from engram.processors.trace import TraceBuilder
from engram.schemas.codec import AvroCodec
from engram.schemas.record import Record
from engram.schemas.records import CodeChange, ConversationTurn, MemoryEvent
from engram.streams.agents.ingest import StateWrite, apply_writes, group_by_key
from engram.streams.agents.stores import with_upstream
from engram.streams.commit import JsonState
from engram.streams.config import EngramConfig
from engram.streams.dream_step import DreamStep
from engram.streams.sealing import eventlog_reader
from engram.streams.steps import CodeGraphStep, FactsStep, TraceStep

Position = tuple[str, int, int]  # topic, partition, offset
Tables = dict[str, dict[str, JsonState]]
T = TypeVar("T")


@dataclass
class Logged(Generic[T]):
    """One topic as the workers' logs hold it: each position once, in position order; how many
    positions a log holds twice, and how many two logs hold with different content."""

    records: list[Record[T]]
    twice: int = 0
    differing: list[str] = field(default_factory=list)  # "topic/partition/offset" of each

    @property
    def differ(self) -> int:
        return len(self.differing)


def logged(configs: Sequence[EngramConfig], topic: str, codec: AvroCodec[T]) -> Logged[T]:
    """The union of the workers' logs of ``topic`` (with two workers a partition that moved is
    archived by both; equal copies count once)."""
    seen: dict[tuple[int, int], tuple[bytes, Record[T]]] = {}
    twice, differing = 0, []
    for config in configs:
        reader = eventlog_reader(config)
        if topic not in reader.topics():
            continue
        within: Counter[tuple[int, int]] = Counter()
        for entry in reader.read([topic]):
            position, raw = (entry["partition"], entry["offset"]), entry["value"] or b""
            within[position] += 1
            if within[position] > 1:
                continue
            if position in seen:
                if seen[position][0] != raw:
                    differing.append(f"{topic}/{position[0]}/{position[1]}")
                continue
            seen[position] = (raw, Record(topic, position[0], position[1], 0, entry["key"], codec.decode(raw)))
        twice += sum(n - 1 for n in within.values())
    return Logged([seen[p][1] for p in sorted(seen)], twice, differing)


def cause(event: MemoryEvent) -> Position | None:
    """The input an event was derived from: its first source."""
    sources = event["sources"]
    return (sources[0]["topic"], sources[0]["partition"], sources[0]["offset"]) if sources else None


@dataclass
class CleanRun:
    """The clean run's events in the order the stores apply them, and its final tables."""

    events: list[MemoryEvent] = field(default_factory=list)
    tables: Tables = field(default_factory=dict)
    dreams: int = 0

    def write(self, table: str, writes: Sequence[StateWrite]) -> None:
        apply_writes(self.tables.setdefault(table, {}), writes)


@dataclass(frozen=True)
class Inputs:
    turns: list[Record[ConversationTurn]]
    code: list[Record[CodeChange]]
    memory: list[Record[MemoryEvent]]  # the memory log: the order, and the compiles' events
    requests_topic: str


def clean_run(inputs: Inputs, config: EngramConfig) -> CleanRun:
    run = CleanRun()
    agent = _MemoryAgent(config, run)
    for partition, events in _in_log_order(inputs, _derive_inputs(inputs, run)):
        if not config.dreaming:
            agent.facts_only(partition, events)
            continue
        made = agent.batch(partition, events)
        while made:  # what a batch made comes back through engram.memory, as what that makes does
            made = agent.batch(partition, made, echoes=True)
    return run


@dataclass
class _MemoryAgent:
    """The memory agent's steps over engram.memory, one batch at a time (streams/agents/stores.py)."""

    config: EngramConfig
    run: CleanRun
    facts: FactsStep = field(default_factory=FactsStep)
    offsets: Counter[int] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        self.dream = DreamStep(Dreamer(self.config.dream, default_token_counter().count))

    def facts_only(self, partition: int, events: list[MemoryEvent]) -> list[MemoryEvent]:
        """A worker that does not dream: the facts step alone."""
        records = self.records(partition, events)
        facts_writes, decided = self.facts.process(
            self.run.tables.get("facts-state", {}), group_by_key(self.facts, records)
        )
        self.run.write("facts-state", facts_writes)
        self.run.events += [*events, *decided]
        return []

    def records(self, partition: int, events: list[MemoryEvent]) -> list[Record[MemoryEvent]]:
        """The events as the next records of ``partition``."""
        records = []
        for event in events:
            records.append(Record(self.config.topics.memory, partition, self.offsets[partition], 0, None, event))
            self.offsets[partition] += 1
        return records

    def batch(self, partition: int, events: list[MemoryEvent], echoes: bool = False) -> list[MemoryEvent]:
        """Apply a batch of ``partition`` (its own events are recorded unless they are ``echoes`` of
        events recorded already); returns what its steps made, the facts step's decisions and the
        dreams, which come back to the dream step through engram.memory as a worker's do: until they
        do, it holds their ids as pending."""
        records = []
        for event in events:
            records.append(Record(self.config.topics.memory, partition, self.offsets[partition], 0, None, event))
            self.offsets[partition] += 1
        facts_writes, decided = self.facts.process(
            self.run.tables.get("facts-state", {}), group_by_key(self.facts, records)
        )
        self.run.write("facts-state", facts_writes)
        upstream = group_by_key(self.dream, with_upstream(records, decided))
        dream_writes, dreamt = self.dream.process(self.run.tables.get("dream-state", {}), upstream)
        self.run.write("dream-state", dream_writes)
        self.run.events += [*([] if echoes else events), *decided, *dreamt]
        self.run.dreams += len(dreamt)
        return [*decided, *dreamt]


def _derive_inputs(inputs: Inputs, run: CleanRun) -> dict[Position, list[MemoryEvent]]:
    """Each input's events, by the input's position: turns and code derived here (their tables
    written to ``run``), the compiles' events as logged (each event once)."""
    trace = TraceStep(TraceBuilder())
    trace_writes, trace_events = trace.process({}, group_by_key(trace, inputs.turns))
    run.write("trace-state", trace_writes)
    code = CodeGraphStep(default_token_counter())
    code_writes, code_events = code.process({}, group_by_key(code, inputs.code))
    run.write("code-state", code_writes)
    derived: dict[Position, list[MemoryEvent]] = {}
    for event in trace_events + code_events:
        derived.setdefault(cause(event) or ("", -1, -1), []).append(event)
    seen: set[str] = set()
    for record in inputs.memory:
        source = cause(record.value)
        if source is not None and source[0] == inputs.requests_topic and record.value["event_id"] not in seen:
            seen.add(record.value["event_id"])
            derived.setdefault(source, []).append(record.value)
    return derived


def _in_log_order(inputs: Inputs, derived: dict[Position, list[MemoryEvent]]) -> list[tuple[int, list[MemoryEvent]]]:
    """(memory partition, events) per input, in the order the memory log first holds an event the
    input caused; inputs the log never shows (lost ones) go last, on the partition their key uses."""
    first: dict[Position, tuple[int, int]] = {}
    partition_of: dict[str, int] = {}
    for record in inputs.memory:
        source = cause(record.value)
        if source is not None:
            first.setdefault(source, (record.partition, record.offset))
        partition_of.setdefault(record.value["key"], record.partition)
    unseen = (1 << 62, 0)
    ordered = sorted(derived.items(), key=lambda item: first.get(item[0], unseen))
    return [(first.get(source, (partition_of.get(events[0]["key"], 0), 0))[0], events) for source, events in ordered]


def changelog_tables(messages: Sequence[Any], names: Sequence[str], app_id: str) -> Tables:
    """The last state per key of each named table, from its changelog's messages (a tombstone deletes)."""
    tables: Tables = {name: {} for name in names}
    topics = {f"{app_id}-{name}-changelog": name for name in names}
    for message in messages:
        name = topics.get(message.topic())
        if name is None:
            continue
        key = _text(message.key())
        value = message.value()
        if value is None:
            tables[name].pop(key, None)
        else:
            tables[name][key] = json.loads(value)
    return tables


def _text(raw: bytes | None) -> str:
    text = (raw or b"").decode("utf-8")
    try:
        decoded = json.loads(text)
    except ValueError:
        return text
    return decoded if isinstance(decoded, str) else text
