"""A fact's history, read from the decision log (seed 003 §V.C): what the facts page and `engram mcp`
show beside an active fact.

The facts state keeps only what is true now (a replacement is marked ``corrects``); engram.memory
keeps every `FactDecided`, each a rule's or a person's decision with its reason, and a replacement
names the fact it ``supersedes``. `FactLog` folds one user's MemoryEvents in log order (one user's
events share a partition, so log order is decision order) and answers, for a fact id:
- ``decisions``: every decision on that id, oldest first (the last `MAX_DECISIONS`);
- ``replaced``: the versions it replaced, newest first, each the value as last stated before it was
  replaced, with when, its source turns, and the rule and reason that replaced it.
A chain is followed by position in the log, so a value that comes back (Paris, Berlin, Paris again:
one fact id twice) is shown as the history it was, not as a loop. Times are epoch ms from the events.

``turns`` gives the text of the source turns named, from the Trace's event nodes in the same log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Final, TypedDict

from engram.schemas.changes import change_as
from engram.schemas.records import FactDecided, MemoryEvent, NodeUpserted

MAX_DECISIONS: Final = 50
MAX_REPLACED: Final = 20
TURN_NODE_KIND: Final = "event"  # the Trace's node for a turn (processors/trace/emit.py)
STATES: Final = frozenset({"store", "replace", "promote"})  # decisions that state the fact's value


def _decision(d: FactDecided) -> dict[str, object]:
    return {
        "decision": d["decision"], "rule": d["rule"], "reason": d["reason"], "value": d["value"],
        "confidence": d["confidence"], "category": d["category"], "horizon": d["horizon"],
        "valid_from_ms": d["valid_from_ms"], "recorded_at_ms": d["recorded_at_ms"], "supersedes": d["supersedes"],
        "source_event_ids": list(d["source_event_ids"]),
    }  # fmt: skip


class FactHistory(TypedDict):
    decisions: list[dict[str, object]]
    replaced: list[dict[str, object]]


class Histories(TypedDict):
    facts: dict[str, FactHistory]
    turns: dict[str, dict[str, object]]


@dataclass(frozen=True, slots=True)
class SaidTurn:
    """A turn as the Trace recorded it: its text, event time (epoch ms) and session."""

    text: str
    time_ms: int
    session_id: str | None


@dataclass
class FactLog:
    """One user's fact decisions and turns, folded from MemoryEvents in log order (see the module
    docstring). Events of other users are ignored."""

    user_id: str
    decisions: list[FactDecided] = field(default_factory=list)
    _by_fact: dict[str, list[int]] = field(default_factory=dict)  # fact id -> positions in ``decisions``
    _turns: dict[str, SaidTurn] = field(default_factory=dict)  # turn id -> the turn

    @staticmethod
    def of(user_id: str, events: Iterable[MemoryEvent]) -> FactLog:
        log = FactLog(user_id)
        for event in events:
            log.add(event)
        return log

    def add(self, event: MemoryEvent) -> None:
        decided = change_as(event, FactDecided)
        if decided is not None and decided["user_id"] == self.user_id:
            self._by_fact.setdefault(decided["fact_id"], []).append(len(self.decisions))
            self.decisions.append(decided)
            return
        node = change_as(event, NodeUpserted)
        if node is not None and node["kind"] == TURN_NODE_KIND and node["user_id"] == self.user_id:
            turn_id = node["properties"].get("turn_id")
            if turn_id is not None:
                self._turns[turn_id] = SaidTurn(node["text"], node["event_time_ms"], node["session_id"])

    def history(self, fact_id: str) -> FactHistory:
        """``decisions`` on ``fact_id`` and the versions it ``replaced`` (see the module docstring)."""
        positions = self._by_fact.get(fact_id, [])
        decisions = [_decision(self.decisions[i]) for i in positions[-MAX_DECISIONS:]]
        return {"decisions": decisions, "replaced": self._replaced(fact_id, len(self.decisions))}

    def _replaced(self, fact_id: str, before: int) -> list[dict[str, object]]:
        """The chain of versions ``fact_id`` replaced, following decisions earlier than ``before``."""
        chain: list[dict[str, object]] = []
        current, until = fact_id, before
        while len(chain) < MAX_REPLACED:
            replacing = self._last(current, until, superseding=True)
            if replacing is None:
                break
            old = self.decisions[replacing]["supersedes"] or ""
            stated = self._last(old, replacing)
            why = self._why_replaced(old, -1 if stated is None else stated, replacing)
            if stated is None:  # the replaced version is older than this log
                chain.append({"fact_id": old, "value": None, **why})
                break
            chain.append(_decision(self.decisions[stated]) | {"fact_id": old, **why})
            current, until = old, stated + 1  # the statement itself may have replaced the one before
        return chain

    def _why_replaced(self, old: str, stated: int, replacing: int) -> dict[str, object]:
        """The rule, reason and time that ended ``old``: the rules retract it (``replace-single-valued``:
        what changed) just before they store its replacement; a person's edit replaces it at once."""
        ended = next((p for p in reversed(self._by_fact.get(old, [])) if stated < p < replacing
                      and self.decisions[p]["decision"] == "retract"), replacing)  # fmt: skip
        by = self.decisions[ended]
        return {"replaced_by_rule": by["rule"], "replaced_reason": by["reason"], "replaced_at_ms": by["recorded_at_ms"]}

    def _last(self, fact_id: str, before: int, *, superseding: bool = False) -> int | None:
        """The position of the last decision on ``fact_id`` before ``before`` that states its value
        (``superseding``: that states it in place of another fact)."""
        for position in reversed(self._by_fact.get(fact_id, [])):
            d = self.decisions[position]
            if position < before and d["decision"] in STATES and (d["supersedes"] or not superseding):
                return position
        return None

    def turns(self, turn_ids: Iterable[str]) -> dict[str, dict[str, object]]:
        """The turns named (those the log holds), by turn id."""
        found: dict[str, dict[str, object]] = {}
        for turn_id in turn_ids:
            turn = self._turns.get(turn_id)
            if turn is not None:
                found[turn_id] = {"text": turn.text, "time_ms": turn.time_ms, "session_id": turn.session_id}
        return found


def histories(log: FactLog, fact_ids: Iterable[str]) -> Histories:
    """The answer of ``GET /facts/history``: each fact's history, and the source turns they name."""
    facts = {fact_id: log.history(fact_id) for fact_id in dict.fromkeys(fact_ids)}
    named: list[str] = []
    for history in facts.values():
        for entry in (*history["decisions"], *history["replaced"]):
            named.extend(_strings(entry.get("source_event_ids")))
    return {"facts": facts, "turns": log.turns(dict.fromkeys(named))}


def _strings(value: object) -> list[str]:
    return [str(v) for v in value] if isinstance(value, list) else []


def source_turns(facts: Iterable[Mapping[str, object]]) -> list[str]:
    """The source turn ids of listed facts (``list_facts`` rows), each once, in order."""
    return list(dict.fromkeys(turn for fact in facts for turn in _strings(fact.get("source_event_ids"))))
