"""The facts API's listing parameters: a bad one is a 400 with a reason a person reads, never
Python's own error text (``/facts?limit=abc`` once answered "invalid literal for int()")."""

from __future__ import annotations

import pytest

from engram.processors.facts.listing import FactQueryError
from engram.streams.facts_api import _query


@pytest.mark.parametrize(("params", "reason"), [
    ({"limit": "abc"}, "limit must be a whole number, not 'abc'"),
    ({"limit": "1.5"}, "limit must be a whole number, not '1.5'"),
    ({"offset": "²"}, "offset must be a whole number, not '²'"),
    ({"limit": "0"}, "limit must be 1..1000"),
])  # fmt: skip
def test_a_bad_listing_parameter_says_what_it_must_be(params: dict[str, str], reason: str) -> None:
    with pytest.raises(FactQueryError) as raised:
        _query(params)
    assert reason in str(raised.value) and "invalid literal" not in str(raised.value)


def test_good_parameters_list() -> None:
    query = _query({"limit": " 20 ", "offset": "40", "search": "berlin"})
    assert (query.limit, query.offset, query.search) == (20, 40, "berlin")
