"""People's edits of their facts (seed 003 §V.C): edit, delete, clear a scope, each as a decision.

An edit is not a write into a table: it is a `FactDecided` MemoryEvent, like the rules' own, so
the log stays the truth, every projection applies it (the view, the graph), and a replay
reproduces it. Its ``rule`` says a person decided (``user-edit``, ``user-delete``), its ``reason``
says who and why (``"edited by user:ada: moved last month"``).
- edit: ``replace``, a new fact (the old one's subject and relation, the new value, confidence 1)
  that ``supersedes`` the old one;
- delete: ``retract`` of the fact;
- clear: one ``retract`` per active fact the scope matches (a category, a horizon, words).
The facts step applies these to the user's state (`apply_edit`); applying one twice changes
nothing, so a redelivered event is harmless.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from engram.processors.facts.listing import FactQuery, list_facts
from engram.processors.facts.model import StoredFact, UserFacts, fact_id, normalize_value
from engram.schemas.events import memory_event
from engram.schemas.records import FACT_DECIDED, FactDecided, MemoryEvent

EDIT_RULES: Final = frozenset({"user-edit", "user-delete"})
MAX_VALUE_CHARS: Final = 500


class FactEditError(ValueError):
    """An edit that cannot be made (an unknown fact, an empty or oversized value), with the reason."""


@dataclass(frozen=True, slots=True)
class Editor:
    """Who edits (the principal, or ``anonymous`` on an open worker), why, and when (epoch ms)."""

    principal: str
    reason: str
    time_ms: int

    def says(self, verb: str) -> str:
        return f"{verb} by {self.principal}" + (f": {self.reason}" if self.reason else "")


def _decided(user_id: str, fact: StoredFact, decision: str, rule: str, reason: str, time_ms: int) -> FactDecided:
    return {
        "fact_id": fact.fact_id, "user_id": user_id, "scope": fact.scope, "scope_id": fact.scope_id,
        "subject": fact.subject, "relation": fact.relation, "value": fact.value, "category": fact.category,
        "confidence": fact.confidence, "decision": decision, "rule": rule, "reason": reason,
        "horizon": fact.horizon, "access_count": fact.access_count, "valid_from_ms": fact.valid_from_ms,
        "valid_to_ms": None, "recorded_at_ms": time_ms, "supersedes": None,
        "source_event_ids": list(fact.source_event_ids),
    }  # fmt: skip


def _event(user_id: str, decided: FactDecided, time_ms: int) -> MemoryEvent:
    return memory_event(user_id, time_ms, [], FACT_DECIDED, decided, f"{decided['rule']}@{time_ms}")


def _active(facts: UserFacts, fact: str) -> StoredFact:
    found = facts.facts.get(fact)
    if found is None:
        msg = f"no active fact {fact!r} for {facts.user_id}"
        raise FactEditError(msg)
    return found


def edit_fact(facts: UserFacts, fact: str, value: str, editor: Editor) -> MemoryEvent:
    """The event that replaces the fact's value (see the module docstring)."""
    old = _active(facts, fact)
    value = value.strip()
    if not value or len(value) > MAX_VALUE_CHARS:
        msg = f"a fact's value must have 1..{MAX_VALUE_CHARS} characters"
        raise FactEditError(msg)
    new_id = fact_id(facts.user_id, old.scope, old.scope_id, old.subject, old.relation, value)
    decided = _decided(facts.user_id, old, "replace", "user-edit", editor.says("edited"), editor.time_ms)
    decided |= {"fact_id": new_id, "value": value, "confidence": 1.0, "supersedes": old.fact_id,
                "valid_from_ms": editor.time_ms}  # fmt: skip
    return _event(facts.user_id, decided, editor.time_ms)


def delete_fact(facts: UserFacts, fact: str, editor: Editor) -> MemoryEvent:
    """The event that retracts the fact."""
    decided = _decided(facts.user_id, _active(facts, fact), "retract", "user-delete", editor.says("deleted"),
                       editor.time_ms)  # fmt: skip
    decided["valid_to_ms"] = editor.time_ms
    return _event(facts.user_id, decided, editor.time_ms)


def clear_facts(facts: UserFacts, scope: FactQuery, editor: Editor) -> list[MemoryEvent]:
    """One retraction per active fact ``scope`` matches (its limit and offset are ignored)."""
    everything = FactQuery(scope.search, scope.category, scope.horizon, limit=1000)
    matched, total = list_facts(facts, everything)
    ids = [str(f["fact_id"]) for f in matched]
    while len(ids) < total:  # more than a page: the rest, in the same order
        page, _ = list_facts(facts, FactQuery(scope.search, scope.category, scope.horizon, 1000, len(ids)))
        ids.extend(str(f["fact_id"]) for f in page)
    return [delete_fact(facts, fact, editor) for fact in ids]


def _stored(decided: FactDecided) -> StoredFact:
    time_ms = decided["recorded_at_ms"]
    return StoredFact(
        decided["fact_id"], decided["scope"], decided["scope_id"], decided["subject"], decided["relation"], "", "",
        decided["category"], decided["horizon"], 1.0, 0, decided["valid_from_ms"], time_ms, time_ms,
    )  # fmt: skip


def apply_edit(facts: UserFacts, decided: FactDecided) -> bool:
    """Apply a person's decision to the state; False when it is not one (the rules' own decisions
    come back through engram.memory too and are already in the state)."""
    if decided["rule"] not in EDIT_RULES:
        return False
    if decided["decision"] == "retract":
        facts.facts.pop(decided["fact_id"], None)
        return True
    old = facts.facts.pop(decided["supersedes"] or "", None)
    if old is not None or decided["fact_id"] not in facts.facts:
        base = old or _stored(decided)
        base.fact_id, base.value, base.norm = decided["fact_id"], decided["value"], normalize_value(decided["value"])
        base.confidence, base.valid_from_ms = decided["confidence"], decided["valid_from_ms"]
        base.recorded_at_ms = decided["recorded_at_ms"]
        facts.facts[base.fact_id] = base
    return True
