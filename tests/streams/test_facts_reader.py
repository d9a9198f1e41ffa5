"""The facts block a request gets shows only facts the view can source (streams/agents/compile.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from engram.processors.facts import FactReconciler, UserFacts
from engram.processors.facts.model import CandidateFact
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import ContextRequest, EventRef
from engram.streams.agents.compile import FactsReader

REF: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 3}


@dataclass
class _Node:
    provenance: list[EventRef]


class _View:
    def __init__(self, held: dict[str, _Node]) -> None:
        self.held = held

    def node(self, node_id: str) -> _Node | None:
        return self.held.get(node_id)


def _request() -> ContextRequest:
    return {
        "request_id": "r1", "user_id": "ada", "session_id": "s", "query": "where do I live?", "token_budget": 500,
        "authorized_layers": ["USER"], "intent_hint": None, "agent_id": "a", "event_time_ms": 10_000,
    }  # fmt: skip


def test_a_fact_the_view_has_not_applied_yet_is_not_shown_without_its_source() -> None:
    state = UserFacts("ada")
    reconciler = FactReconciler()
    reconciler.reconcile(state, [CandidateFact("user", "lives_in", "Berlin", 0.9)], event_time_ms=1_000)
    reconciler.reconcile(state, [CandidateFact("user", "works_at", "Meta", 0.9)], event_time_ms=2_000)
    berlin, meta = list(state.facts)
    table = {"ada": {"facts": state.to_dict(), "applied": {}}}
    view = _View({berlin: _Node([REF])})
    block, accesses = FactsReader(table, cast(MemoryView, view))(_request(), REF)
    assert block is not None
    text, sources = block
    assert "Berlin" in text and "Meta" not in text  # Meta's decision has not reached the view yet
    assert sources == [REF]
    assert len(accesses) == 1
    view.held[meta] = _Node([{**REF, "offset": 4}])
    later, _ = FactsReader(table, cast(MemoryView, view))(_request(), REF)
    assert later is not None and "Meta" in later[0] and len(later[1]) == 2
