"""Retrieval metrics and LoCoMo evidence normalization (pure functions used by the benches).

- ``recall_at``: share of a question's gold items found in the top k (averaged by the caller).
- ``recall_any_at`` / ``recall_all_at`` / ``ndcg_any_at``: LongMemEval's retrieval metrics, written
  as in its official ``src/retrieval/eval_utils.py`` (``evaluate_retrieval``): 1.0 when any / every
  gold item is in the top k, and nDCG@k with binary relevance (that file's DCG gives ranks 1 and 2
  weight 1). The same functions serve its session level and its turn level (gold = the
  ``has_answer`` turns). As there, an empty gold set gives any = 0.0 and all = 1.0.
- ``normalize_evidence``: LoCoMo evidence strings are sometimes malformed ("D8:6; D9:17",
  "D:11:26", "D30:05", space-separated lists, "D"): split on ';', ',' and whitespace, read
  ``D<session>:<turn>`` with optional stray colon and zero padding, keep only existing turns.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Iterable, Sequence
from typing import Final

_DIA_ID: Final = re.compile(r"^D:?0*(\d+):0*(\d+)$")
_SPLIT: Final = re.compile(r"[;,\s]+")


def canonical_dia_id(raw: str) -> str | None:
    """``"D:11:26"`` -> ``"D11:26"``, ``"D30:05"`` -> ``"D30:5"``; None when malformed."""
    match = _DIA_ID.match(raw.strip())
    if match is None:
        return None
    return f"D{int(match.group(1))}:{int(match.group(2))}"


def normalize_evidence(evidence: Iterable[str], existing: Collection[str]) -> list[str]:
    """Canonical, de-duplicated evidence ids that name turns in ``existing`` (canonical ids)."""
    out: dict[str, None] = {}
    for item in evidence:
        for token in _SPLIT.split(str(item)):
            dia_id = canonical_dia_id(token) if token else None
            if dia_id is not None and dia_id in existing:
                out[dia_id] = None
    return list(out)


def recall_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """Fraction of ``gold`` among the first ``k`` of ``ranked`` (0.0 for empty gold)."""
    if not gold:
        return 0.0
    return len(set(ranked[:k]).intersection(gold)) / len(gold)


def recall_any_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 when at least one of ``gold`` is among the first ``k`` of ``ranked`` (0.0 for empty gold)."""
    return 1.0 if set(ranked[:k]).intersection(gold) else 0.0


def recall_all_at(ranked: Sequence[str], gold: Collection[str], k: int) -> float:
    """1.0 when every one of ``gold`` is among the first ``k`` of ``ranked``; 1.0 for empty gold, as
    the official script's ``all(...)`` over no documents gives."""
    return 1.0 if set(gold) <= set(ranked[:k]) else 0.0


def _dcg(relevances: Sequence[float], k: int) -> float:
    rel = list(relevances[:k])
    if not rel:
        return 0.0
    return rel[0] + sum(r / math.log2(i) for i, r in enumerate(rel[1:], start=2))


def ndcg_any_at(ranked: Sequence[str], gold: Collection[str], corpus: Sequence[str], k: int) -> float:
    """nDCG@k with binary relevance over the whole ``corpus`` (ideal = all gold items first)."""
    ideal = _dcg(sorted((1.0 if c in gold else 0.0 for c in corpus), reverse=True), k)
    if ideal == 0.0:
        return 0.0
    return _dcg([1.0 if r in gold else 0.0 for r in ranked], k) / ideal
