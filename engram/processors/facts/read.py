"""Read path (NeuSymMS III.G): the "[Memory – Known facts about this user]" block.

Only user-scoped facts are injected; agent and flow facts stay out of prompts. Reading is an
access, and the access is an event: the block comes with a FactAccessed MemoryEvent that the
reconciler applies to access counts (which can promote a fact).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from engram.processors.facts.model import StoredFact, UserFacts
from engram.schemas.events import fact_accessed, memory_event
from engram.schemas.records import FACT_ACCESSED, EventRef, MemoryEvent

BLOCK_HEADER: Final = "[Memory – Known facts about this user]"
DEFAULT_LIMIT: Final = 30
_HORIZON_LABEL: Final = {"long_term": "LT", "short_term": "ST"}


def block_order(facts: Iterable[StoredFact], limit: int = DEFAULT_LIMIT) -> list[StoredFact]:
    """Long-term before short-term, then most accessed, then most recent; user scope only.
    Ties keep the input order (the state's decision order), so the block is deterministic."""
    chosen = [f for f in facts if f.scope == "user"]
    chosen.sort(key=lambda f: (f.horizon != "long_term", -f.access_count, -f.recorded_at_ms))
    return chosen[: max(0, limit)]


def format_line(fact: StoredFact) -> str:
    label = _HORIZON_LABEL.get(fact.horizon, fact.horizon)
    return f"[{label}/{fact.category}] {fact.subject} {fact.relation} {fact.value}"


def facts_block(
    state_or_facts: UserFacts | Iterable[StoredFact],
    user: str,
    limit: int = DEFAULT_LIMIT,
    *,
    request_id: str = "",
    event_time_ms: int = 0,
    sources: Sequence[EventRef] = (),
) -> tuple[str, MemoryEvent | None]:
    """The block text and the FactAccessed event for the facts it shows.

    Returns ``("", None)`` when there is nothing to show (or the state belongs to another
    user): an empty read is not an access."""
    if isinstance(state_or_facts, UserFacts):
        if state_or_facts.user_id != user:
            return "", None
        facts: Iterable[StoredFact] = state_or_facts.facts.values()
    else:
        facts = state_or_facts
    shown = block_order(facts, limit)
    if not shown:
        return "", None
    text = "\n".join([BLOCK_HEADER, *(format_line(f) for f in shown)])
    change = fact_accessed(user, [f.fact_id for f in shown], request_id)
    event = memory_event(user, event_time_ms, list(sources), FACT_ACCESSED, change, request_id)
    return text, event
