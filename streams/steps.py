"""Processing steps: the pure processors behind the `KeyedProcessor` seam of the ingest agents.

Each step loads the states of the keys in a batch, runs its processor over the batch once, and
hands back the new states and the derived MemoryEvents. No I/O here; the agent owns the tables.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from processors.trace.builder import TraceBuilder
from schemas.records import CodeChange, ConversationTurn, MemoryEvent
from streams.agents.ingest import JsonState, KeyedRecords


@dataclass
class TraceStep:
    """Conversation turns → the episodic DAG (event and concept nodes, NEXT/CAUSAL/REF edges)."""

    builder: TraceBuilder = field(default_factory=TraceBuilder)
    name: str = "trace"

    def key_of(self, record: Any) -> str:
        turn: ConversationTurn = record
        return turn["user_id"]

    def process(
        self, states: dict[str, JsonState | None], groups: dict[str, KeyedRecords]
    ) -> tuple[dict[str, JsonState], list[MemoryEvent]]:
        for key, state in states.items():
            self.builder.load_state(key, state)
        try:
            events = self.builder.apply_batch([item for records in groups.values() for item in records])
            return {key: self.builder.dump_state(key) for key in groups}, events
        finally:
            for key in groups:
                self.builder.drop_state(key)


@dataclass
class CodeFileStep:
    """Code changes → code_file nodes joined to the conversation DAG by CAUSAL edges. Stateless."""

    builder: TraceBuilder = field(default_factory=TraceBuilder)
    name: str = "trace-code"

    def key_of(self, record: Any) -> str:
        change: CodeChange = record
        return change["repo"]

    def process(
        self, states: dict[str, JsonState | None], groups: dict[str, KeyedRecords]
    ) -> tuple[dict[str, JsonState], list[MemoryEvent]]:
        return {}, self.builder.apply_code_batch([item for records in groups.values() for item in records])
