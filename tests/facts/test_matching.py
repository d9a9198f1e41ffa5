"""Matching's batch judgement equals judging each fact alone (the reference the rules were written against)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from engram.processors.facts.engine import RuleEngine
from engram.processors.facts.matching import ValueMatch, _judge, select
from engram.processors.facts.model import StoredFact

_VALUES = ("dish 3", "dish 30", "dish 3x", "sushi", "sushi bar", "google", "googlee", "march 10", "march 12",
           "cat named whiskers", "cat", "dog rex", "", "python", "pythons")  # fmt: skip
_RELATIONS = ("likes", "works_at", "speaks_language", "stopped", "has_pet", "owns", "lives_in", "no_longer_has", "lost")


@dataclass(frozen=True, slots=True)
class _Candidate:
    seq: int
    fact_id: str
    key: str
    relation: str
    value: str


def _fact(i: int, relation: str, value: str, subject: str) -> StoredFact:
    return StoredFact(f"f{i}", "user", "", subject, relation, value, value, "other", "long_term", 0.9, 0, 0, 0, 0)


def _reference(
    memory: list[StoredFact], candidates: list[_Candidate], engine: RuleEngine
) -> tuple[list[str], list[ValueMatch]]:
    """`select` as it was: every fact judged alone, in order."""
    index, threshold = engine.index, engine.policy.similarity
    chosen: dict[str, StoredFact] = {}
    matches: list[ValueMatch] = []
    for i, cand in enumerate(candidates):
        relations = index.interacting(cand.relation)
        for fact in memory:
            if fact.key != cand.key or (relations is not None and fact.relation not in relations):
                continue
            keep, match = _judge(cand, fact.relation, fact.norm, fact.fact_id, index, threshold)
            if keep:
                chosen[fact.fact_id] = fact
            if match is not None:
                matches.append(match)
        for earlier in candidates[:i]:
            if earlier.key == cand.key and (relations is None or earlier.relation in relations):
                _, match = _judge(cand, earlier.relation, earlier.value, earlier.fact_id, index, threshold)
                if match is not None:
                    matches.append(match)
    return list(chosen), matches


def test_select_judges_every_fact_as_one_at_a_time_would() -> None:
    engine = RuleEngine()
    rng = random.Random(7)
    for _ in range(300):
        subjects = ("user", "sister")
        size = rng.randint(0, 12)
        memory = [_fact(i, rng.choice(_RELATIONS), rng.choice(_VALUES), rng.choice(subjects)) for i in range(size)]
        candidates = [
            _Candidate(s, f"c{s}", f"user::{rng.choice(subjects)}", rng.choice(_RELATIONS), rng.choice(_VALUES))
            for s in range(rng.randint(1, 4))
        ]
        chosen, matches = select(memory, candidates, engine.index, engine.policy.similarity, precompute=True)
        assert ([f.fact_id for f in chosen], matches) == _reference(memory, candidates, engine)
