"""Precision and recall of an extractor against labeled utterances.

A predicted triple matches a gold one when subject and relation are equal after
normalization and the values are equal after normalization or their normalized Levenshtein
similarity is at least 0.85 (the same threshold the rules use for "same entity"). Matching is
one-to-one: each gold triple is matched at most once.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rapidfuzz.distance import Levenshtein

from engram.processors.facts.extractor import Extractor, Utterance
from engram.processors.facts.model import normalize_relation, normalize_subject, normalize_value

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


def triples_match(gold: Triple, predicted: Triple, threshold: float = 0.85) -> bool:
    if normalize_subject(gold[0]) != normalize_subject(predicted[0]):
        return False
    if normalize_relation(gold[1]) != normalize_relation(predicted[1]):
        return False
    a, b = normalize_value(gold[2]), normalize_value(predicted[2])
    return a == b or Levenshtein.normalized_similarity(a, b) >= threshold


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
        utterance = Utterance(str(row["text"]), str(row.get("role", "user")), "agent-1")
        predicted = [(c.subject, c.relation, c.value) for c in extractor.extract([utterance])]
        gold = [(str(f["subject"]), str(f["relation"]), str(f["value"])) for f in row["facts"]]
        items.append((gold, predicted))
    return items


def score_labeled(rows: Iterable[Mapping[str, Any]], extractor: Extractor) -> ExtractionScore:
    """Precision and recall of ``extractor`` over labeled rows (see ``labeled_items``)."""
    return score_extraction(labeled_items(rows, extractor))
