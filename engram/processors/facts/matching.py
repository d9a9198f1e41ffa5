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

from rapidfuzz.distance import Levenshtein

from engram.processors.facts.model import StoredFact


@dataclass(frozen=True, slots=True)
class MatchInput:
    """A candidate as matching sees it (the engine's view: normalized value, scope key)."""

    seq: int
    fact_id: str
    key: str
    relation: str
    value: str


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
            relations: frozenset[str] | None = frozenset((candidate_relation,))
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
        for fact in by_key.get(cand.key, ()):
            if relations is not None and fact.relation not in relations:
                continue
            if not precompute:
                chosen[fact.fact_id] = fact
                continue
            keep, match = _judge(cand, fact.relation, fact.norm, fact.fact_id, index, threshold)
            if keep:
                chosen[fact.fact_id] = fact
            if match is not None:
                matches.append(match)
        if precompute:
            for earlier in candidates[:i]:
                if earlier.key == cand.key and (relations is None or earlier.relation in relations):
                    _, match = _judge(cand, earlier.relation, earlier.value, earlier.fact_id, index, threshold)
                    if match is not None:
                        matches.append(match)
    return list(chosen.values()), matches


def _judge(
    cand: MatchInput, relation: str, value: str, fid: str, index: RelationIndex, threshold: float
) -> tuple[bool, ValueMatch | None]:
    targets = index.negation_targets.get(cand.relation)
    if targets is None and value == cand.value:
        return True, None  # an exact duplicate: its own rule, no similarity needed
    # a negation's match is kept below the threshold when its words are contained (with its score)
    score = value_similarity(cand.value, value, 0.0 if targets is not None else threshold)
    contains = targets is not None and value_contains(cand.value, value)
    match = ValueMatch(cand.seq, fid, score, contains) if score >= threshold or contains else None
    if targets is not None:
        return match is not None or (cand.value == "" and relation in targets), match
    return match is not None or relation not in index.multi_valued, match
