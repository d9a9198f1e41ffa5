"""Which active facts a batch of candidates needs in working memory, and (in precomputed mode)
the value matches the rules test.

This is the index the paper keeps on (subject, relation) for contradiction detection: it
only narrows what the rules see, it decides nothing. In callback mode every fact of the same
scope key and an interacting relation goes in and the rules call back for similarity. In
precomputed mode a fact goes in only if some rule can act on it: an exact duplicate, a value at
or above the similarity threshold, a fact a negation matches, or any fact of a relation that
is not known to be multi-valued (a possible contradiction).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Protocol

from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from engram.processors.facts.model import StoredFact


class MatchInput(Protocol):
    """A candidate as matching sees it (the engine's ``EngineCandidate``: normalized value, scope key)."""

    @property
    def seq(self) -> int: ...
    @property
    def fact_id(self) -> str: ...
    @property
    def key(self) -> str: ...
    @property
    def relation(self) -> str: ...
    @property
    def value(self) -> str: ...


@dataclass(frozen=True, slots=True)
class ValueMatch:
    seq: int
    fact_id: str
    score: float
    contains: bool


_NUMBER = re.compile(r"\d+")


@lru_cache(maxsize=65_536)
def _numbers(value: str) -> tuple[str, ...]:
    """The numbers a value names (kept: a user's facts are matched against every batch's candidates)."""
    return tuple(_NUMBER.findall(value))


def value_similarity(a: str, b: str, cutoff: float = 0.0) -> float:
    """Normalized Levenshtein similarity in [0, 1] (1 - distance / longer length); 0 when the
    values name different numbers ("March 10" and "March 12" are two dates, not one misspelt).
    Below ``cutoff`` it is 0: the distance stops counting there (rapidfuzz's ``score_cutoff``)."""
    if _numbers(a) != _numbers(b):
        return 0.0
    return float(Levenshtein.normalized_similarity(a, b, score_cutoff=cutoff))


def value_contains(a: str, b: str) -> bool:
    """Every word of the shorter value is a word of the longer one: "cat" and "dog rex" are
    contained in "cat named whiskers" and "dog named rex"."""
    words_a, words_b = a.split(), b.split()
    if not words_a or not words_b:
        return False
    short, long = (words_a, words_b) if len(words_a) <= len(words_b) else (words_b, words_a)
    return set(short) <= set(long)


@dataclass(frozen=True, slots=True)
class RelationIndex:
    """What the rule files say about relations, read once from the loaded environment."""

    negation_targets: dict[str, frozenset[str]]
    multi_valued: frozenset[str]
    any_relation: str = "ANY"
    opposites: dict[str, frozenset[str]] = field(default_factory=dict)  # policy.clp: likes <-> dislikes
    _interacting: dict[str, frozenset[str] | None] = field(default_factory=dict, compare=False, repr=False)

    def interacts(self, candidate_relation: str, fact_relation: str) -> bool:
        """Whether the rules ever judge a candidate of this relation against a fact of that one."""
        relations = self.interacting(candidate_relation)
        return relations is None or fact_relation in relations

    def interacting(self, candidate_relation: str) -> frozenset[str] | None:
        """The relations the rules judge a candidate of this relation against (None: every one)."""
        if candidate_relation in self._interacting:
            return self._interacting[candidate_relation]
        targets = self.negation_targets.get(candidate_relation)
        if targets is None:
            relations: frozenset[str] | None = frozenset((candidate_relation,)) | self.opposites.get(
                candidate_relation, frozenset()
            )
        else:
            relations = None if self.any_relation in targets else targets | {candidate_relation}
        self._interacting[candidate_relation] = relations
        return relations


def select(
    memory: Iterable[StoredFact],
    candidates: Sequence[MatchInput],
    index: RelationIndex,
    threshold: float,
    *,
    precompute: bool,
) -> tuple[list[StoredFact], list[ValueMatch]]:
    """The facts to assert and, when ``precompute``, the value matches (including matches with
    earlier candidates of the batch, by the id they would be stored under)."""
    keys = {c.key for c in candidates}
    by_key: dict[str, list[StoredFact]] = {}
    for fact in memory:
        if (key := fact.key) in keys:
            by_key.setdefault(key, []).append(fact)
    chosen: dict[str, StoredFact] = {}
    matches: list[ValueMatch] = []
    for i, cand in enumerate(candidates):
        relations = index.interacting(cand.relation)
        facts = [f for f in by_key.get(cand.key, ()) if relations is None or f.relation in relations]
        if not precompute:
            chosen.update((f.fact_id, f) for f in facts)
            continue
        if facts:
            _judge_facts(cand, facts, index, threshold, chosen, matches)
        for earlier in candidates[:i]:
            if earlier.key == cand.key and (relations is None or earlier.relation in relations):
                _, match = _judge(cand, earlier.relation, earlier.value, earlier.fact_id, index, threshold)
                if match is not None:
                    matches.append(match)
    return list(chosen.values()), matches


def _judge_facts(
    cand: MatchInput,
    facts: Sequence[StoredFact],
    index: RelationIndex,
    threshold: float,
    chosen: dict[str, StoredFact],
    matches: list[ValueMatch],
) -> None:
    """``_judge`` against every fact at once, in the facts' order: the similarities at the threshold
    come from one call of rapidfuzz's batch scorer over the values (one call per fact cost a third
    of a batch's matching), and a negation's contained words are tested against its words split once."""
    value = cand.value
    targets = index.negation_targets.get(cand.relation)
    hits = {
        at: score
        for _, score, at in process.extract(
            value, [f.norm for f in facts], scorer=Levenshtein.normalized_similarity, score_cutoff=threshold, limit=None
        )
    }
    words = value.split() if targets is not None else []
    for at, fact in enumerate(facts):
        norm = fact.norm
        opposite = fact.relation != cand.relation and targets is None  # a liking against a dislike
        if targets is None and norm == value and not opposite:
            chosen[fact.fact_id] = fact  # an exact duplicate: its own rule, no similarity needed
            continue
        score = hits.get(at, 0.0)
        if score and _numbers(value) != _numbers(norm):
            score = 0.0  # different numbers: two values, not one misspelt (`value_similarity`)
        contains = bool(words) and _contained(words, norm)
        if contains and score < threshold:
            score = value_similarity(value, norm)  # a negation's match below the threshold keeps its score
        if score >= threshold or contains:
            chosen[fact.fact_id] = fact
            matches.append(ValueMatch(cand.seq, fact.fact_id, float(score), contains))
        elif targets is None and not opposite and fact.relation not in index.multi_valued:
            chosen[fact.fact_id] = fact  # a possible contradiction
        elif targets is None and not opposite and value.startswith(f"{norm} named "):
            chosen[fact.fact_id] = fact  # the same thing, named now ("kitten" -> "kitten named biscuit")
        elif targets is not None and value == "" and fact.relation in targets:
            chosen[fact.fact_id] = fact  # a negation of the whole attribute


def _contained(words: list[str], other: str) -> bool:
    """``value_contains`` with the first value's words split already (and the other's kept)."""
    count, others = _words(other)
    if not count:
        return False
    return set(words) <= others if len(words) <= count else others <= set(words)


@lru_cache(maxsize=65_536)
def _words(value: str) -> tuple[int, frozenset[str]]:
    """How many words a value has and which (kept: a user's facts meet every negation)."""
    words = value.split()
    return len(words), frozenset(words)


def _judge(
    cand: MatchInput, relation: str, value: str, fid: str, index: RelationIndex, threshold: float
) -> tuple[bool, ValueMatch | None]:
    targets = index.negation_targets.get(cand.relation)
    if targets is None and value == cand.value and relation == cand.relation:
        return True, None  # an exact duplicate: its own rule, no similarity needed
    # a negation's match is kept below the threshold when its words are contained (with its score)
    score = value_similarity(cand.value, value, 0.0 if targets is not None else threshold)
    contains = targets is not None and value_contains(cand.value, value)
    match = ValueMatch(cand.seq, fid, score, contains) if score >= threshold or contains else None
    if targets is not None:
        return match is not None or (cand.value == "" and relation in targets), match
    refines = relation == cand.relation and cand.value.startswith(f"{value} named ")  # named now
    return match is not None or relation not in index.multi_valued or refines, match
