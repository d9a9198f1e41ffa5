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

    def _apply_accesses(self, state: UserFacts) -> list[MemoryEvent]:
        with self._lock:
            journal = self._accesses.pop(state.user_id, [])
        return [
            e
            for accessed, at_ms, ref in journal
            for e in self.reconciler.apply_access(state, accessed, event_time_ms=at_ms, sources=[ref])
        ]

    def process(
        self, states: Mapping[str, JsonState], groups: dict[str, KeyedRecords]
    ) -> tuple[list[StateWrite], list[MemoryEvent]]:
        writes: list[StateWrite] = []
        events: list[MemoryEvent] = []
        for user, records in groups.items():
            # One state load and dump per user per batch; each new turn is reconciled in order.
            state, applied = facts_state(states.get(user), user)
            events.extend(self._apply_accesses(state))
            for turn, ref in records:
                position = f"{ref['topic']}/{ref['partition']}"
                if ref["offset"] <= applied.get(position, -1):
                    continue  # redelivered after a restart: already decided, and deciding again is not a no-op
                candidates = self.extractor.extract([Utterance.from_turn(turn)])
                events.extend(
                    self.reconciler.reconcile(state, candidates, event_time_ms=turn["event_time_ms"], sources=[ref])
                )
                applied[position] = ref["offset"]
            writes.append(StateWrite(user, user, {"facts": state.to_dict(), "applied": applied}))
        return writes, events


def facts_state(data: JsonState | None, user: str) -> tuple[UserFacts, dict[str, int]]:
    """A user's facts and the last source offset applied per topic/partition, from the facts table."""
    if not data:
        return UserFacts(user_id=user), {}
    return UserFacts.from_dict(dict(data["facts"])), {str(k): int(v) for k, v in data["applied"].items()}


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
