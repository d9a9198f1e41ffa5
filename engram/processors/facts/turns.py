"""One turn through the write path, as the Faust agent calls it: the table holds the user's
state as a JSON-able dict, the turn comes with its source coordinates."""

from __future__ import annotations

from collections.abc import Mapping

from engram.processors.facts.extractor import Extractor, Utterance
from engram.processors.facts.model import UserFacts
from engram.processors.facts.reconciler import FactReconciler
from engram.schemas.records import ConversationTurn, EventRef, MemoryEvent


class StateOwnerError(ValueError):
    """The stored state belongs to another user than the turn (a keying bug upstream)."""


def facts_from_turn(
    reconciler: FactReconciler,
    extractor: Extractor,
    state_data: Mapping[str, object] | None,
    turn: ConversationTurn,
    ref: EventRef,
) -> tuple[dict[str, object], list[MemoryEvent]]:
    """Extract, reconcile against the user's active facts, return (new state dict, events).

    Event time and ids come from the turn and ``ref`` only, so replaying the log reproduces the
    same events and the same state."""
    user = turn["user_id"]
    state = UserFacts.from_dict(dict(state_data)) if state_data else UserFacts(user_id=user)
    if state.user_id != user:
        msg = f"state of user {state.user_id!r} offered for a turn of user {user!r}"
        raise StateOwnerError(msg)
    candidates = extractor.extract([Utterance.from_turn(turn)])
    events = reconciler.reconcile(state, candidates, event_time_ms=turn["event_time_ms"], sources=[ref])
    return state.to_dict(), events
