"""The facts API's reads (seed 003 §V.C): a user's active facts listed, searched and filtered, and
their summary counts. Pure: the worker reads the user's state from its facts table and calls these."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from engram.processors.facts.model import StoredFact, UserFacts

HORIZONS = ("long_term", "short_term")


class FactQueryError(ValueError):
    """A listing parameter out of range, with the reason."""


@dataclass(frozen=True, slots=True)
class FactQuery:
    """``search``: words that must all occur in the subject, relation or value (case-insensitive);
    ``category`` and ``horizon`` ("long_term" or "short_term") filter; newest first, ``offset`` then ``limit``."""

    search: str = ""
    category: str | None = None
    horizon: str | None = None
    limit: int = 100
    offset: int = 0

    def __post_init__(self) -> None:
        if self.horizon is not None and self.horizon not in HORIZONS:
            msg = f"horizon must be one of {', '.join(HORIZONS)}, not {self.horizon!r}"
            raise FactQueryError(msg)
        if not 1 <= self.limit <= 1000 or self.offset < 0:
            msg = "limit must be 1..1000 and offset 0 or more"
            raise FactQueryError(msg)


def _matches(fact: StoredFact, query: FactQuery, words: list[str]) -> bool:
    if query.category is not None and fact.category != query.category:
        return False
    if query.horizon is not None and fact.horizon != query.horizon:
        return False
    text = f"{fact.subject} {fact.relation} {fact.value}".lower()
    return all(word in text for word in words)


def list_facts(facts: UserFacts, query: FactQuery) -> tuple[list[dict[str, object]], int]:
    """The page of matching facts (as the API shows them) and how many match in all."""
    words = query.search.lower().split()
    found = [f for f in facts.facts.values() if _matches(f, query, words)]
    found.sort(key=lambda f: (-f.recorded_at_ms, f.fact_id))
    return [f.to_dict() for f in found[query.offset : query.offset + query.limit]], len(found)


def summary(facts: UserFacts) -> dict[str, object]:
    """Counts: active facts, long-term and short-term, and per category."""
    horizons = Counter(f.horizon for f in facts.facts.values())
    return {
        "active": len(facts.facts),
        "long_term": horizons.get("long_term", 0),
        "short_term": horizons.get("short_term", 0),
        "by_category": dict(sorted(Counter(f.category for f in facts.facts.values()).items())),
    }
