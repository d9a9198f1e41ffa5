"""Processing steps: the pure processors behind the `KeyedProcessor` seam of the ingest agents.

Each step loads the states of the keys in a batch, runs its processor over the batch once, and
hands back the new states and the derived MemoryEvents. No I/O here; the agent owns the tables.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from processors.code import CodeGraphConfig, RepoCodeState, apply_changes
from processors.facts import Extractor, FactReconciler, PatternExtractor, UserFacts, Utterance
from processors.tokens import TokenCounter
from processors.trace.builder import TraceBuilder
from schemas.records import CodeChange, ConversationTurn, EventRef, FactAccessed, MemoryEvent
from streams.agents.ingest import JsonState, KeyedRecords, StateWrite


@dataclass
class TraceStep:
    """Conversation turns → the episodic DAG (event and concept nodes, NEXT/CAUSAL/REF edges)."""

    builder: TraceBuilder = field(default_factory=TraceBuilder)
    name: str = "trace"

    def key_of(self, record: Any) -> str:
        turn: ConversationTurn = record
        return turn["user_id"]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        for key in groups:
            self.builder.load_state(key, states.get(key))
        try:
            events = self.builder.apply_batch([item for records in groups.values() for item in records])
            return [StateWrite(key, key, self.builder.dump_state(key)) for key in groups], events
        finally:
            for key in groups:
                self.builder.drop_state(key)


@dataclass
class FactsStep:
    """Conversation turns → candidate facts → CLIPS reconciliation against the user's active facts.

    Reads of the facts block (compile agent) are accesses; they are journaled here and applied to
    the user's state before that user's next turns, so this agent stays the table's only writer.
    The FactAccessed events themselves are in engram.memory (and the log) at once.
    """

    reconciler: FactReconciler = field(default_factory=FactReconciler)
    extractor: Extractor = field(default_factory=PatternExtractor)
    name: str = "facts"
    _accesses: dict[str, list[tuple[FactAccessed, int, EventRef]]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def key_of(self, record: Any) -> str:
        turn: ConversationTurn = record
        return turn["user_id"]

    def note_access(self, accessed: FactAccessed, event_time_ms: int, ref: EventRef) -> None:
        with self._lock:
            self._accesses.setdefault(accessed["user_id"], []).append((accessed, event_time_ms, ref))

    def _apply_accesses(self, user: str, data: JsonState | None) -> tuple[JsonState | None, list[MemoryEvent]]:
        with self._lock:
            journal = self._accesses.pop(user, [])
        if not journal or not data:
            return data, []
        state = UserFacts.from_dict(dict(data))
        events = [
            e
            for accessed, at_ms, ref in journal
            for e in self.reconciler.apply_access(state, accessed, event_time_ms=at_ms, sources=[ref])
        ]
        return state.to_dict(), events

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        writes: list[StateWrite] = []
        events: list[MemoryEvent] = []
        for user, records in groups.items():
            data, access_events = self._apply_accesses(user, states.get(user))
            events.extend(access_events)
            # One state load and dump per user per batch; each turn is reconciled in order.
            state = UserFacts.from_dict(dict(data)) if data else UserFacts(user_id=user)
            for turn, ref in records:
                candidates = self.extractor.extract([Utterance.from_turn(turn)])
                events.extend(
                    self.reconciler.reconcile(state, candidates, event_time_ms=turn["event_time_ms"], sources=[ref])
                )
            writes.append(StateWrite(user, user, state.to_dict()))
        return writes, events


PATH_SEP = "\x1f"


@dataclass
class CodeGraphStep:
    """Code changes → the code graph (entities, CONTAINS/CALLS/INHERITS/IMPORTS/HAS_METHOD, CAUSAL
    from the turns that caused a change). One repo's state can be megabytes, so the table holds
    one record per (repo, path); the step caches each repo's assembled state in memory and
    rebuilds it from the table the first time it sees the repo (after a restart or rebalance)."""

    counter: TokenCounter
    config: CodeGraphConfig = field(default_factory=CodeGraphConfig)
    name: str = "code"
    repos: dict[str, RepoCodeState] = field(default_factory=dict)

    def key_of(self, record: Any) -> str:
        change: CodeChange = record
        return change["repo"]

    def repo_state(self, repo: str, states: Mapping[str, JsonState]) -> RepoCodeState:
        state = self.repos.get(repo)
        if state is None:
            prefix = f"{repo}{PATH_SEP}"
            records = {k.removeprefix(prefix): v for k, v in list(states.items()) if k.startswith(prefix)}
            state = self.repos[repo] = RepoCodeState.from_records(repo, records)
        return state

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        writes: list[StateWrite] = []
        events: list[MemoryEvent] = []
        for repo, records in groups.items():
            state = self.repo_state(repo, states)
            try:
                events.extend(apply_changes(state, records, self.counter, self.config))
            except Exception:
                self.repos.pop(repo, None)  # the table still holds the last good records
                raise
            writes.extend(
                StateWrite(repo, f"{repo}{PATH_SEP}{path}", record) for path, record in state.take_changes().items()
            )
        return writes, events
