"""FactReconciler: candidates in, FactDecided MemoryEvents out, per-user state updated.

The rule engine decides; this module only selects the active facts the rules need, applies
the decisions to the user's state in the order the rules made them, and writes them as
events. Every time comes from the source event (``event_time_ms``) or an explicit ``now_ms``,
so a replay of the same input yields byte-identical events.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from engram.processors.facts import corrections
from engram.processors.facts.employer import employer_read
from engram.processors.facts.engine import (
    Decision,
    EngineCandidate,
    FactPolicy,
    RuleEngine,
    SimilarityMode,
)
from engram.processors.facts.model import (
    CandidateFact,
    StoredFact,
    UserFacts,
    fact_id,
    normalize_value,
    scope_key,
)
from engram.processors.facts.people import by_name
from engram.schemas.events import memory_event
from engram.schemas.records import FACT_DECIDED, EventRef, FactAccessed, FactDecided, MemoryEvent

ENGINE_ERROR_RULE: Final = "kept-on-engine-error"
"""The rule of a fact kept short-term because the rule engine failed on its turn."""


@dataclass(frozen=True, slots=True)
class ReconcilerConfig:
    policy: FactPolicy = field(default_factory=FactPolicy)
    similarity: SimilarityMode = "precomputed"


PAPER = ReconcilerConfig()
"""The paper's deployment: drop < 0.3, Levenshtein >= 0.85, promote at 3 accesses, 24 h TTL;
similarity computed in Python and passed in as value-match facts (measured faster)."""
CALLBACK = ReconcilerConfig(similarity="callback")
"""Same policy; the rules call a Python similarity function registered with the environment."""


@dataclass(frozen=True, slots=True)
class PromptContext:
    """The paper's prompt-context template: relevance hints for the rules (intent ``instruction``
    classifies unknown relations as instructions)."""

    intent: str = "statement"
    turn_number: int = 0
    keywords: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class _Pending:
    seq: int
    candidate: CandidateFact
    fact_id: str
    norm: str


class FactReconciler:
    """Holds one rule engine; the per-user state (``UserFacts``) is passed in and updated in
    place, so a Faust table keyed by user can hold it as ``state.to_dict()``."""

    def __init__(self, config: ReconcilerConfig = PAPER) -> None:
        self.config = config
        self.engine = RuleEngine(config.policy, config.similarity)
        self._categories: dict[str, str] | None = None

    @staticmethod
    def new_state(user_id: str) -> UserFacts:
        return UserFacts(user_id=user_id)

    @staticmethod
    def load_state(data: dict[str, object]) -> UserFacts:
        return UserFacts.from_dict(data)

    @staticmethod
    def dump_state(state: UserFacts) -> dict[str, object]:
        return state.to_dict()

    def reconcile(
        self,
        state: UserFacts,
        candidates: Sequence[CandidateFact],
        *,
        event_time_ms: int,
        sources: Sequence[EventRef] = (),
        context: PromptContext | None = None,
    ) -> list[MemoryEvent]:
        """Decide a batch (one turn's candidates, in order) against the user's active facts."""
        if not candidates:
            return []
        resolved = self._read(state, candidates)
        pending = [self._pending(state.user_id, seq, c) for seq, (c, _) in enumerate(resolved)]
        engine_cands = [
            EngineCandidate(
                p.seq,
                p.fact_id,
                scope_key(p.candidate.scope, p.candidate.scope_id, p.candidate.subject),
                p.candidate.relation,
                p.norm,
                p.candidate.confidence,
                corrects,
            )
            for p, (_, corrects) in zip(pending, resolved, strict=True)
        ]
        ctx = None if context is None else (context.intent, context.turn_number, context.keywords)
        decisions = self.engine.decide(list(state.facts.values()), engine_cands, ctx)
        refs = list(sources)
        return [self._apply(state, d, pending[d.seq], event_time_ms, refs) for d in decisions]

    @staticmethod
    def _read(state: UserFacts, candidates: Sequence[CandidateFact]) -> list[tuple[CandidateFact, str]]:
        """The candidates as the user's memory reads them: a relative called by name ("Ana moved to
        Berlin": who Ana is), where they are "at" as their employer, and which fact a correction
        puts right ("his name's Jack not Jake"), with the id of that fact ("" for the others)."""
        return corrections.resolve(state, employer_read(state, by_name(state, candidates)))

    @staticmethod
    def _pending(user_id: str, seq: int, raw: CandidateFact) -> _Pending:
        cand = raw.normalized()
        fid = fact_id(user_id, cand.scope, cand.scope_id, cand.subject, cand.relation, cand.value)
        return _Pending(seq, cand, fid, normalize_value(cand.value))

    def _apply(
        self, state: UserFacts, d: Decision, p: _Pending, event_time_ms: int, refs: list[EventRef]
    ) -> MemoryEvent:
        cand = p.candidate
        valid_from = cand.valid_from_ms if cand.valid_from_ms is not None else event_time_ms
        sources = list(cand.source_event_ids)
        if d.action in ("store", "replace"):
            stored = StoredFact(
                fact_id=d.fact_id,
                scope=cand.scope,
                scope_id=cand.scope_id,
                subject=cand.subject,
                relation=cand.relation,
                value=cand.value,
                norm=p.norm,
                category=d.category,
                horizon=d.horizon,
                confidence=cand.confidence,
                access_count=0,
                valid_from_ms=valid_from,
                recorded_at_ms=event_time_ms,
                last_access_ms=event_time_ms,
                source_event_ids=sources,
                corrects=bool(d.supersedes),
            )
            state.facts[d.fact_id] = stored
            change = _decided(state.user_id, stored, d, recorded_at_ms=event_time_ms, sources=sources)
        elif d.action == "retract":
            old = state.facts.pop(d.fact_id)
            change = _decided(
                state.user_id, old, d, recorded_at_ms=event_time_ms, sources=sources, valid_to_ms=valid_from
            )
        elif d.action == "skip_duplicate":
            change = _decided(state.user_id, state.facts[d.fact_id], d, recorded_at_ms=event_time_ms, sources=sources)
        else:
            change = _candidate_decided(state.user_id, p, d, valid_from, event_time_ms)
        return memory_event(state.user_id, event_time_ms, refs, FACT_DECIDED, change, f"{event_time_ms}:{d.seq}")

    def keep_on_error(
        self,
        state: UserFacts,
        candidates: Sequence[CandidateFact],
        error: Exception,
        *,
        event_time_ms: int,
        sources: Sequence[EventRef] = (),
    ) -> list[MemoryEvent]:
        """The rule engine failed on this turn (seed 003 §VI.B): its candidates are kept as short-term
        facts, each with the error as its reason, instead of being lost. A negation is dropped (only
        the rules can judge what it retracts), and so is a fact already active and a correction no
        fact was found for; a name or a correction is read as `reconcile` reads it first."""
        if self._categories is None:
            self._categories = self.engine.relation_categories()
        refs = list(sources)
        events: list[MemoryEvent] = []
        for seq, (candidate, _) in enumerate(self._read(state, candidates)):
            p = self._pending(state.user_id, seq, candidate)
            relation = p.candidate.relation
            unresolved = relation == corrections.CORRECTED
            if unresolved or self.engine.is_negation(relation) or not p.norm or p.fact_id in state.facts:
                continue
            reason = f"the rule engine failed ({error}): {relation} '{p.norm}' kept as short_term"
            category = self._categories.get(relation, "other")
            d = Decision(seq, p.fact_id, "store", ENGINE_ERROR_RULE, reason, category, "short_term", "")
            events.append(self._apply(state, d, p, event_time_ms, refs))
        return events

    def apply_access(
        self,
        state: UserFacts,
        accessed: FactAccessed,
        *,
        event_time_ms: int,
        sources: Sequence[EventRef] = (),
    ) -> list[MemoryEvent]:
        """Count a read of these facts; short-term facts reaching the threshold are promoted."""
        if accessed["user_id"] != state.user_id:
            return []
        touched: list[StoredFact] = []
        for fid in dict.fromkeys(accessed["fact_ids"]):
            fact = state.facts.get(fid)
            if fact is not None:
                fact.access_count += 1
                fact.last_access_ms = event_time_ms
                touched.append(fact)
        short = [f for f in touched if f.horizon == "short_term"]
        if not short:
            return []
        decisions = self.engine.lifecycle(short, now_ms=None, check_access=True)
        return self._lifecycle_events(state, decisions, event_time_ms, list(sources), accessed["request_id"])

    def prune(self, state: UserFacts, now_ms: int) -> list[MemoryEvent]:
        """Deactivate short-term facts older than the TTL that were never accessed (timer-driven)."""
        short = [f for f in state.facts.values() if f.horizon == "short_term"]
        if not short:
            return []
        decisions = self.engine.lifecycle(short, now_ms=now_ms, check_access=False)
        return self._lifecycle_events(state, decisions, now_ms, [], f"prune@{now_ms}")

    @staticmethod
    def _lifecycle_events(
        state: UserFacts, decisions: Sequence[Decision], time_ms: int, refs: list[EventRef], discriminator: str
    ) -> list[MemoryEvent]:
        events: list[MemoryEvent] = []
        order = {fid: i for i, fid in enumerate(state.facts)}
        for d in sorted(decisions, key=lambda d: order[d.fact_id]):
            fact = state.facts[d.fact_id]
            if d.action == "promote":
                fact.horizon = "long_term"
            elif d.action == "prune":
                del state.facts[d.fact_id]
            change = _decided(state.user_id, fact, d, recorded_at_ms=time_ms, sources=list(fact.source_event_ids))
            events.append(memory_event(state.user_id, time_ms, refs, FACT_DECIDED, change, discriminator))
        return events


def _decided(
    user_id: str,
    fact: StoredFact,
    d: Decision,
    *,
    recorded_at_ms: int,
    sources: list[str],
    valid_to_ms: int | None = None,
) -> FactDecided:
    return {
        "fact_id": fact.fact_id,
        "user_id": user_id,
        "scope": fact.scope,
        "scope_id": fact.scope_id,
        "subject": fact.subject,
        "relation": fact.relation,
        "value": fact.value,
        "category": fact.category,
        "confidence": fact.confidence,
        "decision": d.action,
        "rule": d.rule,
        "reason": d.reason,
        "horizon": fact.horizon,
        "access_count": fact.access_count,
        "valid_from_ms": fact.valid_from_ms,
        "valid_to_ms": valid_to_ms,
        "recorded_at_ms": recorded_at_ms,
        "supersedes": d.supersedes or None,
        "source_event_ids": sources,
    }


def _candidate_decided(user_id: str, p: _Pending, d: Decision, valid_from: int, recorded_at_ms: int) -> FactDecided:
    cand = p.candidate
    return {
        "fact_id": p.fact_id,
        "user_id": user_id,
        "scope": cand.scope,
        "scope_id": cand.scope_id,
        "subject": cand.subject,
        "relation": cand.relation,
        "value": cand.value,
        "category": d.category,
        "confidence": cand.confidence,
        "decision": d.action,
        "rule": d.rule,
        "reason": d.reason,
        "horizon": d.horizon,
        "access_count": 0,
        "valid_from_ms": valid_from,
        "valid_to_ms": None,
        "recorded_at_ms": recorded_at_ms,
        "supersedes": None,
        "source_event_ids": list(cand.source_event_ids),
    }
