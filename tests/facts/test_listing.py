"""The facts API's reads: search, filters, paging and summary counts over a user's active facts."""

from __future__ import annotations

import pytest

from engram.processors.facts.listing import FactQuery, FactQueryError, list_facts, summary
from engram.processors.facts.model import StoredFact, UserFacts


def fact(i: int, relation: str, value: str, category: str = "personal", horizon: str = "long_term") -> StoredFact:
    return StoredFact(f"f{i}", "user", "ada", "user", relation, value, value.lower(), category, horizon, 0.9, 0,
                      i, 1_000 + i, 0, [f"t{i}"])  # fmt: skip


FACTS = UserFacts("ada", {f.fact_id: f for f in [
    fact(1, "works_at", "Acme"), fact(2, "lives_in", "Berlin"),
    fact(3, "likes", "green tea", "preference", "short_term"),
    fact(4, "likes", "Berlin techno", "preference", "short_term"),
]})  # fmt: skip


def ids(query: FactQuery) -> list[str]:
    return [str(f["fact_id"]) for f in list_facts(FACTS, query)[0]]


def test_search_filters_and_paging() -> None:
    assert ids(FactQuery()) == ["f4", "f3", "f2", "f1"]  # newest first
    assert ids(FactQuery(search="BERLIN")) == ["f4", "f2"]
    assert ids(FactQuery(search="berlin techno")) == ["f4"]  # every word must occur
    assert ids(FactQuery(category="preference")) == ["f4", "f3"]
    assert ids(FactQuery(horizon="long_term")) == ["f2", "f1"]
    assert ids(FactQuery(limit=2, offset=1)) == ["f3", "f2"]
    assert list_facts(FACTS, FactQuery(limit=1))[1] == 4  # the total counts every match


def test_summary_counts() -> None:
    assert summary(FACTS) == {"active": 4, "long_term": 2, "short_term": 2,
                              "by_category": {"personal": 2, "preference": 2}}  # fmt: skip


@pytest.mark.parametrize("bad", [{"horizon": "forever"}, {"limit": 0}, {"limit": 5000}, {"offset": -1}])
def test_out_of_range_parameters_say_why(bad: dict[str, str | int]) -> None:
    horizon = bad.get("horizon")
    with pytest.raises(FactQueryError):
        FactQuery(horizon=str(horizon) if horizon else None, limit=int(bad.get("limit", 100)),
                  offset=int(bad.get("offset", 0)))  # fmt: skip
