"""Precision and recall of an extractor against labeled utterances.

A predicted triple matches a gold one when subject and relation are equal after
normalization and the values are equal after normalization or their normalized Levenshtein
similarity is at least 0.85 (the same threshold the rules use for "same entity"). Matching is
one-to-one: each gold triple is matched at most once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Final

from rapidfuzz.distance import Levenshtein

from engram.processors.facts.corrections import CORRECTED
from engram.processors.facts.extractor import Extractor, Utterance
from engram.processors.facts.model import normalize_relation, normalize_subject, normalize_value
from engram.processors.facts.subjects import NAMED

Triple = tuple[str, str, str]


@dataclass(frozen=True, slots=True)
class ExtractionScore:
    true_positives: int
    false_positives: int
    false_negatives: int

    @property
    def precision(self) -> float:
        found = self.true_positives + self.false_positives
        return self.true_positives / found if found else 1.0

    @property
    def recall(self) -> float:
        gold = self.true_positives + self.false_negatives
        return self.true_positives / gold if gold else 1.0


PHRASE_RELATIONS: Final = frozenset(
    {"did", "does", "is_doing", "thinks", "plans_to", "wants_to", "needs_to", "working_on", "is_learning", "can"}
)
"""Relations whose values are verb phrases: a whole phrase may say a word or two more than the gold."""
PHRASE_SLACK: Final = 2


def triples_match(gold: Triple, predicted: Triple, threshold: float = 0.85) -> bool:
    """Same subject and relation, and the same value (normalized, or Levenshtein similarity >=
    ``threshold``); for a verb-phrase relation also a value holding every word of the gold one and
    at most ``PHRASE_SLACK`` words more (a whole phrase, not a run-on)."""
    if normalize_subject(gold[0]) != normalize_subject(predicted[0]):
        return False
    relation = normalize_relation(gold[1])
    if relation != normalize_relation(predicted[1]):
        return False
    a, b = normalize_value(gold[2]), normalize_value(predicted[2])
    if a == b or Levenshtein.normalized_similarity(a, b) >= threshold:
        return True
    words_a, words_b = a.split(), b.split()
    return relation in PHRASE_RELATIONS and set(words_a) <= set(words_b) and len(words_b) <= len(words_a) + PHRASE_SLACK


def match_count(gold: Sequence[Triple], predicted: Sequence[Triple]) -> int:
    used: set[int] = set()
    hits = 0
    for p in predicted:
        for i, g in enumerate(gold):
            if i not in used and triples_match(g, p):
                used.add(i)
                hits += 1
                break
    return hits


def score_extraction(items: Iterable[tuple[Sequence[Triple], Sequence[Triple]]]) -> ExtractionScore:
    """``items``: (gold triples, predicted triples) per utterance."""
    tp = fp = fn = 0
    for gold, predicted in items:
        hits = match_count(gold, predicted)
        tp += hits
        fp += len(predicted) - hits
        fn += len(gold) - hits
    return ExtractionScore(tp, fp, fn)


def labeled_items(rows: Iterable[Mapping[str, Any]], extractor: Extractor) -> list[tuple[list[Triple], list[Triple]]]:
    """(gold, predicted) per labeled row: ``{"text", "role"?, "facts": [{"subject", "relation", "value"}]}``."""
    items: list[tuple[list[Triple], list[Triple]]] = []
    for row in rows:
        utterance = Utterance(
            str(row["text"]), str(row.get("role", "user")), "agent-1", time_ms=_time_ms(row.get("time"))
        )
        # a heard self-correction or a person called by name is not a fact yet: the reconciler resolves
        # it against what the user said before (facts/corrections.py, facts/people.py)
        predicted = [
            (c.subject, c.relation, c.value)
            for c in extractor.extract([utterance])
            if c.relation != CORRECTED and not c.subject.startswith(NAMED)
        ]
        gold = [(str(f["subject"]), str(f["relation"]), str(f["value"])) for f in row["facts"]]
        items.append((gold, predicted))
    return items


def score_labeled(rows: Iterable[Mapping[str, Any]], extractor: Extractor) -> ExtractionScore:
    """Precision and recall of ``extractor`` over labeled rows (see ``labeled_items``)."""
    return score_extraction(labeled_items(rows, extractor))


def _time_ms(iso: object) -> int | None:
    """A labeled row's ``time`` (ISO 8601, UTC) as epoch ms: when it was said."""
    if not isinstance(iso, str):
        return None
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)
