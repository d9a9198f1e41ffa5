"""Runs the data-driven scenarios of fixtures/scenarios.json against the real rule engine.

A scenario is a list of steps for one or more users; each step feeds candidates (``facts``),
an utterance through the pattern extractor (``say``), a read of the facts block (``read``,
whose FactAccessed event is applied back), a prune timer tick (``prune``), or checks the
bi-temporal queries (``believed``, ``valid``) and the block (``block``). Every step that
decides lists the exact decisions expected, in order, with their rule names and reasons.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Final, cast

from engram.processors.facts.extractor import PatternExtractor, Utterance
from engram.processors.facts.model import CandidateFact, UserFacts, normalize_value
from engram.processors.facts.read import facts_block
from engram.processors.facts.reconciler import FactReconciler, PromptContext
from engram.processors.facts.temporal import fact_decisions
from engram.schemas.records import FACT_ACCESSED, FactAccessed, FactDecided, MemoryEvent

FIXTURES: Final = Path(__file__).parent / "fixtures"
# What every rule's reason says, with {rel} the decided fact's relation and {val} its normalized value.
REASONS: Final = {
    "promote-by-category": r"\w+ facts are durable: {rel} '{val}' stored as long_term",
    "store-short-term": r"\w+ facts start short_term: {rel} '{val}' \(promoted after 3 accesses\)",
    "keep-correction-long-term": r"{rel} '{val}' corrects a long_term fact: stored as long_term",
    "replace-single-valued": r"{rel} '{val}' is superseded by '.+' \(single-valued: latest wins\)",
    "retract-negated-fact": r"\w+ '.+' negates {rel} '{val}'",
    "retract-negated-relation": r"\w+ \(no value\) negates every {rel}: '{val}'",
    "skip-exact-duplicate": r"{rel} '{val}' is already an active fact",
    "skip-near-duplicate": r"{rel} '.+' is a near-duplicate of '{val}' \(similarity 0\.\d\d >= 0\.85\)",
    "drop-low-confidence": r"{rel} '{val}': confidence [\d.]+ is below the minimum 0\.3",
    "drop-unmatched-negation": r"{rel} '{val}' matches no active fact; negations are never stored",
    "drop-empty-value": r"{rel} has no value: nothing to store",
    "promote-by-access": r"{rel} '{val}' was accessed \d+ times \(>= 3\): promoted to long_term",
    "prune-stale-short-term": r"{rel} '{val}' is short_term, never accessed, and older than the TTL of 24\.0 h",
}
BASE_MS: Final = 1_700_000_000_000
HOUR_MS: Final = 3_600_000


def load_scenarios() -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], json.loads((FIXTURES / "scenarios.json").read_text(encoding="utf-8")))


def at(hours: float) -> int:
    return BASE_MS + round(hours * HOUR_MS)


def candidate(spec: list[Any], source: str) -> CandidateFact:
    relation, value, confidence = spec[0], spec[1], spec[2]
    extra: dict[str, Any] = spec[3] if len(spec) > 3 else {}
    valid_from = extra.get("valid_from_h")
    return CandidateFact(
        subject=extra.get("subject", "user"),
        relation=relation,
        value=value,
        confidence=confidence,
        scope=extra.get("scope", "user"),
        scope_id=extra.get("scope_id", ""),
        source_event_ids=(source,),
        valid_from_ms=None if valid_from is None else at(valid_from),
    )


class ScenarioRun:
    """One scenario's users, states and log; ``step`` returns the decisions it produced."""

    def __init__(self, reconciler: FactReconciler, extractor: PatternExtractor) -> None:
        self.reconciler = reconciler
        self.extractor = extractor
        self.states: dict[str, UserFacts] = {}
        self.log: list[MemoryEvent] = []
        self.reads = 0

    def state(self, user: str) -> UserFacts:
        return self.states.setdefault(user, self.reconciler.new_state(user))

    def step(self, index: int, step: dict[str, Any]) -> list[MemoryEvent]:
        user = step.get("user", "u1")
        state = self.state(user)
        t = at(step.get("t", 0))
        op = step["op"]
        source = f"turn-{index}"
        events: list[MemoryEvent] = []
        if op == "facts":
            cands = [candidate(c, source) for c in step["c"]]
            ctx = PromptContext(intent=step["intent"]) if "intent" in step else None
            events = self.reconciler.reconcile(state, cands, event_time_ms=t, context=ctx)
        elif op == "say":
            utt = Utterance(step["text"], step.get("role", "user"), step.get("agent_id"), None, (source,))
            events = self.reconciler.reconcile(state, self.extractor.extract([utt]), event_time_ms=t)
        elif op == "read":
            self.reads += 1
            _, accessed = facts_block(state, user, request_id=f"req-{self.reads}", event_time_ms=t)
            assert accessed is not None, "a read of a non-empty state is an access"
            self.log.append(accessed)
            kind, change = accessed["change"]
            assert kind == FACT_ACCESSED
            events = self.reconciler.apply_access(state, cast(FactAccessed, change), event_time_ms=t)
        elif op == "prune":
            events = self.reconciler.prune(state, t)
        self.log.extend(events)
        return events

    def decisions(self) -> list[FactDecided]:
        return fact_decisions(self.log)


def check_decision(got: FactDecided, want: list[Any], run: ScenarioRun, where: str) -> None:
    decision, rule, relation, value = want[0], want[1], want[2], want[3]
    extra: dict[str, Any] = want[4] if len(want) > 4 else {}
    assert (got["decision"], got["rule"], got["relation"], got["value"]) == (decision, rule, relation, value), where
    template = REASONS[got["rule"]].format(rel=re.escape(relation), val=re.escape(normalize_value(value)))
    assert re.fullmatch(template, got["reason"]), f"{where}: reason {got['reason']!r}"
    if "why" in extra:
        assert extra["why"] in got["reason"], f"{where}: reason {got['reason']!r}"
    row = cast(dict[str, object], got)
    for key in ("horizon", "category", "scope", "scope_id", "subject", "access_count"):
        if key in extra:
            assert row[key] == extra[key], f"{where}: {key} is {row[key]!r}"
    if "user" in extra:
        assert got["user_id"] == extra["user"], where
    if "supersedes" in extra:
        old = [d for d in run.decisions() if d["fact_id"] == got["supersedes"]]
        assert old and old[0]["value"] == extra["supersedes"], f"{where}: supersedes {got['supersedes']}"
    times = (("valid_to_h", "valid_to_ms"), ("valid_from_h", "valid_from_ms"), ("recorded_at_h", "recorded_at_ms"))
    for key, field in times:
        if key in extra:
            assert row[field] == at(extra[key]), f"{where}: {field}"
