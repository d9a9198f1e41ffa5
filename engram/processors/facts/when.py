"""Relative times resolved against when they were said: "last Friday" said on 2026-03-12 is 2026-03-06.

dateparser (a maintained library for dates in text) reads the expression against the turn's own
time, never the clock, so a replay resolves the same. A period ("last year", "next month") stands
for its first day. Results are cached: chat repeats a few expressions ("yesterday", "last week").
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

from dateparser.date import DateDataParser

DAY_MS: Final = 86_400_000


def resolve(expression: str, said_at_ms: int) -> int | None:
    """The start (epoch ms, UTC midnight) of the day or period ``expression`` names, said at
    ``said_at_ms``; None when it names no time dateparser can place ("once", "lately")."""
    day = said_at_ms - said_at_ms % DAY_MS
    return _resolve(expression.lower().strip(), day)


@lru_cache(maxsize=4096)
def _resolve(expression: str, day_ms: int) -> int | None:
    base = datetime.fromtimestamp(day_ms / 1000, tz=UTC).replace(tzinfo=None)
    parser = DateDataParser(languages=["en"], settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": _prefer(expression),
                                                        "RETURN_TIME_AS_PERIOD": True})  # fmt: skip
    data = parser.get_date_data(expression.removeprefix("on ").removeprefix("this past "))
    found = data.date_obj
    if found is None:
        return None
    if data.period == "year":
        found = found.replace(month=1, day=1)
    elif data.period == "month":
        found = found.replace(day=1)
    start = found.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
    return int(start.timestamp() * 1000)


def _prefer(expression: str) -> str:
    future = ("next", "tomorrow", "in ", "this coming", "upcoming", "tonight", "later")
    return "future" if expression.startswith(future) else "past"
