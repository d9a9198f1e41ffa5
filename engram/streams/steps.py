"""Processing steps: the pure processors behind the `KeyedProcessor` seam of the agents.

Each step loads the states of the keys in a batch, runs its processor over the batch once, and
hands back the new states and the derived MemoryEvents. No I/O here; the agent owns the tables.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TypedDict

from engram.processors.code import CodeGraphConfig, RepoCodeState, apply_changes
from engram.processors.dreaming.config import HOUR_MS
from engram.processors.facts import (
    Extractor,
    FactReconciler,
    PatternExtractor,
    PromptContext,
    RuleEngineError,
    UserFacts,
    Utterance,
)
from engram.processors.facts.context import MAX_CONTEXT_CHARS, confirmed
from engram.processors.facts.edits import apply_edit
from engram.processors.tokens import TokenCounter
from engram.processors.trace import EVENT_KIND
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.records import MissingPartError, read_state, state_records
from engram.processors.trace.state import TraceState
from engram.schemas.changes import change_as
from engram.schemas.record import Record
from engram.schemas.records import (
    CodeChange,
    ConversationTurn,
    EventRef,
    FactAccessed,
    FactDecided,
    MemoryEvent,
    NodeUpserted,
    SubjectErased,
)
from engram.streams.agents.ingest import KeyedRecords, StateWrite, group_by_key
from engram.streams.commit import JsonState
from engram.streams.held import HeldStates

logger = logging.getLogger(__name__)


@dataclass
class TraceStep:
    """Conversation turns → the episodic DAG (event and concept nodes, NEXT/CAUSAL/REF edges).

    A user's state is kept in table parts, a batch writing what it changed
    (processors/trace/records.py). The states it wrote stay in hand (``held``): while the table
    still holds the very head a batch wrote for a user, the next batch goes on from that state
    instead of reading its parts again."""

    builder: TraceBuilder = field(default_factory=TraceBuilder)
    name: str = "trace"
    held: HeldStates[TraceState] = field(default_factory=HeldStates)

    def key_of(self, record: Record[ConversationTurn]) -> str:
        return record.value["user_id"]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        for key in groups:
            self.builder.adopt(key, self.held.take(key, states.get(key)) or _read_trace(key, states))
        try:
            events = self.builder.apply_batch([(r.value, r.ref) for records in groups.values() for r in records])
            writes = {key: state_records(self.builder.state(key)) for key in groups}
            for key, records in writes.items():  # put back only once the batch has its writes: a failure leaves none
                head = next(record for part, record in records if part == key and record is not None)
                self.held.put(key, head, self.builder.state(key))
            return [StateWrite(key, part, state) for key, records in writes.items() for part, state in records], events
        finally:
            for key in groups:
                self.builder.drop_state(key)


def _read_trace(user: str, states: Mapping[str, JsonState]) -> TraceState:
    """The user's state from its table parts; an erasure stopped between its deletes (a head whose
    parts are gone) reads as the empty state it was erasing to."""
    try:
        return read_state(user, states) or TraceState(user)
    except MissingPartError:
        logger.warning("the Trace state of %r is half erased; it starts empty", user, exc_info=True)
        return TraceState(user)


PRUNE_PREFIX = "\x00facts-prune/"  # + partition: the partition's prune clock and who it prunes


def is_clock(key: str) -> bool:
    """A partition's prune clock in the facts table, not a user's facts."""
    return key.startswith(PRUNE_PREFIX)


@dataclass
class _FactsBatch:
    """One batch's users (state, applied offsets, the reply a confirmation answers, the boundary
    each was last pruned at) and the partitions' prune clocks, loaded once and written at the end."""

    states: Mapping[str, JsonState]
    users: dict[str, tuple[UserFacts, dict[str, int]]] = field(default_factory=dict)
    asked: dict[str, str] = field(default_factory=dict)
    pruned_at: dict[str, int] = field(default_factory=dict)
    # user -> (its partition, the batch's key whose records are at that partition: where it is written)
    changed: dict[str, tuple[int, str]] = field(default_factory=dict)
    boundaries: dict[int, int] = field(default_factory=dict)  # partition -> the last boundary its time crossed
    short: dict[int, set[str]] = field(default_factory=dict)  # partition -> its users with short-term facts
    events: list[MemoryEvent] = field(default_factory=list)

    def user(self, user: str) -> UserFacts:
        if user not in self.users:
            data = self.states.get(user)
            self.users[user] = facts_state(data, user)
            self.asked[user] = str((data or {}).get("asked", ""))
            self.pruned_at[user] = int((data or {}).get("pruned_at", -1))
        return self.users[user][0]

    def clock(self, partition: int) -> tuple[int, set[str]]:
        """The last prune boundary the partition's stream time crossed, and its users with
        short-term facts (the ones a boundary prunes)."""
        if partition not in self.boundaries:
            data = self.states.get(f"{PRUNE_PREFIX}{partition}") or {}
            self.boundaries[partition] = int(data.get("boundary", -1))
            self.short[partition] = {str(u) for u in data.get("users", [])}
        return self.boundaries[partition], self.short[partition]

    def touched(self, user: str, partition: int, group: str) -> None:
        """The user's state changed: written at the end (at ``group``'s partition, a key of the batch:
        a user pruned by another's record has none of its own), and counted among its partition's
        users with short-term facts while it holds any (at once, so the batching changes nothing)."""
        self.changed[user] = (partition, group)
        _, short = self.clock(partition)
        if any(f.horizon == "short_term" for f in self.users[user][0].facts.values()):
            short.add(user)
        else:
            short.discard(user)

    def writes(self) -> list[StateWrite]:
        out: list[StateWrite] = []
        for user, (_, group) in self.changed.items():
            state, applied = self.users[user]
            row: dict[str, object] = {"facts": state.to_dict(), "applied": applied, "pruned_at": self.pruned_at[user]}
            out.append(StateWrite(group, user, row | ({"asked": self.asked[user]} if self.asked[user] else {})))
        for partition, boundary in self.boundaries.items():
            at = next((g for p, g in self.changed.values() if p == partition), None)
            if at is not None:  # at a batch key of the partition; none changed there: nothing to keep
                clock = {"boundary": boundary, "users": sorted(self.short[partition])}
                out.append(StateWrite(at, f"{PRUNE_PREFIX}{partition}", clock))
        return out


@dataclass
class FactsStep:
    """engram.memory → candidate facts → CLIPS reconciliation against the user's active facts.

    It reads a user's memory in offset order: the Trace event node of each turn (the utterance,
    citing its turn) and each FactAccessed (a read of the facts block by the compile path, citing
    its request). Both travel through the log, so a replay of engram.memory gives the same
    decisions, promotions included. A source already applied (a redelivered batch, or a turn or
    request derived twice after a restart) is skipped: deciding again is not a no-op.

    The lifecycle timer (NeuSymMS: short-term facts never accessed are pruned after the TTL) runs
    on the partition's stream time: when a record of the partition crosses a ``prune_every_ms``
    boundary, every user of the partition holding short-term facts is pruned at that boundary,
    before the record, so an inactive user is pruned too and a replay prunes at the same points
    (records are taken in partition and offset order; each user keeps the boundary it was last
    pruned at, so a batch that comes again after a crash prunes no one twice).
    """

    reconciler: FactReconciler = field(default_factory=FactReconciler)
    extractor: Extractor = field(default_factory=PatternExtractor)
    prune_every_ms: int = HOUR_MS
    name: str = "facts"

    def key_of(self, record: Record[MemoryEvent]) -> str:
        return record.value["key"]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        batch = _FactsBatch(states)
        for record in sorted((r for rs in groups.values() for r in rs), key=lambda r: (r.partition, r.offset)):
            self._tick(batch, record, record.value["event_time_ms"])
            self._record(batch, record)
        return batch.writes(), batch.events

    def _record(self, batch: _FactsBatch, record: Record[MemoryEvent]) -> None:
        event: MemoryEvent = record.value
        user = event["key"]
        if change_as(event, SubjectErased) is not None:  # forget every fact; keep the offsets
            batch.user(user)
            batch.users[user] = (UserFacts(user_id=user), batch.users[user][1])
            batch.touched(user, record.partition, user)
            return
        edit = change_as(event, FactDecided)
        if edit is not None and apply_edit(batch.user(user), edit):  # a person's edit (processors/facts/edits.py)
            batch.touched(user, record.partition, user)
            return
        node = change_as(event, NodeUpserted)
        said = Utterance.from_event_node(node) if node is not None and node["kind"] == EVENT_KIND else None
        accessed = change_as(event, FactAccessed)
        if said is None and accessed is None:
            return
        state = batch.user(user)
        if not first_time(batch.users[user][1], event["sources"]):
            return
        if said is not None:
            batch.events.extend(self._said(state, said, batch.asked[user], event))
            batch.asked[user] = said.text[-MAX_CONTEXT_CHARS:] if said.role == "assistant" else ""
        elif accessed is not None:
            batch.events.extend(self.reconciler.apply_access(state, accessed, **_cited(event)))
        batch.touched(user, record.partition, user)

    def _tick(self, batch: _FactsBatch, record: Record[MemoryEvent], time_ms: int) -> None:
        """The partition's stream time reaches ``time_ms`` (``record``'s): past a new boundary, every
        user of the partition with short-term facts is pruned at it (those not pruned at it already)."""
        boundary = time_ms - time_ms % self.prune_every_ms
        partition = record.partition
        crossed, short = batch.clock(partition)
        if boundary <= crossed:
            return
        batch.boundaries[partition] = boundary
        for user in sorted(short):
            state = batch.user(user)
            if batch.pruned_at[user] >= boundary:
                continue
            batch.pruned_at[user] = boundary
            batch.events.extend(self.reconciler.prune(state, boundary))
            batch.touched(user, partition, batch.changed.get(user, (partition, record.value["key"]))[1])

    def _said(self, state: UserFacts, said: Utterance, asked: str, event: MemoryEvent) -> list[MemoryEvent]:
        """A turn's facts: from its words, or, for "yes, that's right", from what it confirms. On a
        rule-engine error the candidates are kept short-term (``keep_on_error``), never dead-lettered."""
        answer = confirmed(said, asked)
        context = PromptContext(intent="confirmation") if answer is not None else None
        candidates = self.extractor.extract([answer or said])
        try:
            return self.reconciler.reconcile(state, candidates, context=context, **_cited(event))
        except RuleEngineError as error:
            logger.warning("the rule engine failed on a turn of %r; its facts are kept short-term", state.user_id)
            return self.reconciler.keep_on_error(state, candidates, error, **_cited(event))


class _Cited(TypedDict):
    event_time_ms: int
    sources: list[EventRef]


def _cited(event: MemoryEvent) -> _Cited:
    """A decision's time and provenance: those of the turn or request behind the event."""
    return {"event_time_ms": event["event_time_ms"], "sources": event["sources"][:1]}


def first_time(applied: dict[str, int], sources: list[EventRef]) -> bool:
    """True (and ``applied`` records it) when the first source lies past what was applied from its
    topic/partition: one user's sources of one partition reach their memory in offset order."""
    if not sources:
        return False
    source = sources[0]
    position = f"{source['topic']}/{source['partition']}"
    if source["offset"] <= applied.get(position, -1):
        return False
    applied[position] = source["offset"]
    return True


def facts_state(data: JsonState | None, user: str) -> tuple[UserFacts, dict[str, int]]:
    """A user's facts and the last source offset applied per topic/partition, from the facts table."""
    if not data:
        return UserFacts(user_id=user), {}
    return UserFacts.from_dict(dict(data["facts"])), {str(k): int(v) for k, v in data["applied"].items()}


PATH_SEP = "\x1f"
MARK_SEP = "\x1e"  # a repo's mark record: not under its files' prefix


@dataclass
class CodeGraphStep:
    """Code changes → the code graph (entities, CONTAINS/CALLS/INHERITS/IMPORTS/HAS_METHOD, CAUSAL
    from the turns that caused a change). One repo's state can be megabytes, so the table holds
    one record per (repo, path); the step caches each repo's assembled state in memory and
    rebuilds it from the table the first time it sees the repo (after a restart or rebalance). A
    repo's mark record (the offset of its last change applied) tells whether the cache is still the
    table's: the table holds the very mark object this step wrote, unless another worker wrote the
    repo since (its write recovered from the changelog is a new object) or this step's last batch
    was never committed; either way the step rebuilds. Changes at or below the mark (those since the
    last offset commit, which come again after a crash) are not applied again."""

    counter: TokenCounter
    config: CodeGraphConfig = field(default_factory=CodeGraphConfig)
    name: str = "code"
    repos: dict[str, RepoCodeState] = field(default_factory=dict)
    marks: dict[str, JsonState] = field(default_factory=dict)

    def key_of(self, record: Record[CodeChange]) -> str:
        return record.value["repo"]

    def repo_state(self, repo: str, states: Mapping[str, JsonState]) -> RepoCodeState:
        state = self.repos.get(repo)
        if state is None or states.get(f"{repo}{MARK_SEP}") is not self.marks.get(repo):
            prefix = f"{repo}{PATH_SEP}"
            records = {k.removeprefix(prefix): v for k, v in list(states.items()) if k.startswith(prefix)}
            state = self.repos[repo] = RepoCodeState.from_records(repo, records)
        return state

    @staticmethod
    def unapplied(repo: str, records: KeyedRecords, states: Mapping[str, JsonState]) -> KeyedRecords:
        """The changes past the repo's mark. Offsets are committed after the state is written (and
        on Faust's interval), so after a crash the changes since the last commit come again to a
        state that holds them; applied again they would diff the newer state back to an older
        change (removals, then re-additions at other times)."""
        mark = states.get(f"{repo}{MARK_SEP}")
        applied = int(mark["offset"]) if mark is not None else -1
        return [r for r in records if r.offset > applied]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        writes: list[StateWrite] = []
        events: list[MemoryEvent] = []
        for repo, records in groups.items():
            records = self.unapplied(repo, records, states)
            if not records:
                continue
            state = self.repo_state(repo, states)
            try:
                # One change at a time, in offset order: what a change derives (its nodes' sources and
                # times) must not depend on which changes shared its batch, which a replay or a
                # restart draws differently.
                for r in records:
                    events.extend(apply_changes(state, [(r.value, r.ref)], self.counter, self.config))
            except Exception:
                self.repos.pop(repo, None)  # the table still holds the last good records
                raise
            writes.extend(
                StateWrite(repo, f"{repo}{PATH_SEP}{path}", record) for path, record in state.take_changes().items()
            )
            mark = self.marks[repo] = {"offset": records[-1].offset}
            writes.append(StateWrite(repo, f"{repo}{MARK_SEP}", mark))
        return writes, events


def derive_turns(
    turns: Sequence[Record[ConversationTurn]], memory_topic: str
) -> tuple[list[MemoryEvent], dict[str, JsonState]]:
    """What a worker derives from these turns, in one process with fresh state: the Trace events,
    then the facts step over them as they reach engram.memory (per user, in order), with the
    users' records of the facts table it ends with (not the partitions' prune clocks: one
    partition here). For replay checks: a clean derivation to compare a run against."""
    trace = TraceStep(TraceBuilder())
    derived = trace.process({}, group_by_key(trace, turns))[1]
    memory = [Record(memory_topic, 0, offset, 0, None, event) for offset, event in enumerate(derived)]
    facts = FactsStep()
    writes, decided = facts.process({}, group_by_key(facts, memory))
    return derived + decided, {w.key: w.state for w in writes if w.state is not None and not is_clock(w.key)}
