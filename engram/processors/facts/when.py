"""Relative times resolved against when they were said: "last Friday" said on 2026-03-12 is 2026-03-06.

dateparser (a maintained library for dates in text) reads the expression against the turn's own
time, never the clock, so a replay resolves the same. A period ("last year", "next month") stands
for its first day.

A dateparser call costs about 0.7 ms, and a conversation says the same few expressions on many
different days, so what is cached is the expression's *shape*, not one day's answer:
- an expression that names a calendar date ("on March 3", "in 2019") depends on the very day: cached
  by day;
- one whose answer is a month or a year ("last month", "next year") depends on the base's month:
  cached by month, as the date it names;
- any other ("yesterday", "two weeks ago", "last Friday", "next week") moves with the day it is said
  and depends on nothing but its weekday: cached by weekday, as an offset in days.
On LoCoMo's 2,760 turns at their session times the extractor resolves 133 expressions, 129 of them
on a day not seen before for that expression; dateparser is called 76 times (a dateparser call per
expression and weekday, not per expression and day, in a long run).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from functools import lru_cache
from typing import Final

from dateparser.date import DateDataParser

from engram.processors.facts import lexicon as lx

DAY_MS: Final = 86_400_000
_CALENDAR: Final = re.compile(rf"\d{{3,4}}|\b(?:{lx.alternation(lx.MONTHS)})\b|\d(?:st|nd|rd|th)\b")
_PERIODS: Final = frozenset({"month", "year"})


def resolve(expression: str, said_at_ms: int) -> int | None:
    """The start (epoch ms, UTC midnight) of the day or period ``expression`` names, said at
    ``said_at_ms``; None when it names no time dateparser can place ("once", "lately")."""
    day = said_at_ms - said_at_ms % DAY_MS
    expression = expression.lower().strip()
    if _CALENDAR.search(expression):
        return parsed(expression, day)[0]
    when = datetime.fromtimestamp(day / 1000, tz=UTC)
    key = (expression, when.weekday())
    if key not in _SHAPES:
        _SHAPES.put(key, _shape(expression, day))
    shape = _SHAPES[key]
    if shape is None:
        return None
    if shape != PERIOD:
        return day + shape * DAY_MS
    month = (expression, when.year * 12 + when.month)
    if month not in _MONTHS:
        _MONTHS.put(month, parsed(expression, day)[0])
    return _MONTHS[month]


PERIOD: Final = -(1 << 40)
"""The shape of an expression that names a month or a year (no offset in days is this large)."""


def _shape(expression: str, day_ms: int) -> int | None:
    """An expression's offset in days from the day it is said, or ``PERIOD``; None: it names nothing."""
    start, period = parsed(expression, day_ms)
    if start is None:
        return None
    return PERIOD if period in _PERIODS else (start - day_ms) // DAY_MS


class _Bounded(dict[tuple[str, int], int | None]):
    """A dict that forgets its oldest entries past ``limit`` (insertion order)."""

    def __init__(self, limit: int) -> None:
        super().__init__()
        self.limit = limit

    def put(self, key: tuple[str, int], value: int | None) -> None:
        if len(self) >= self.limit:
            del self[next(iter(self))]
        self[key] = value


_SHAPES: Final = _Bounded(4096)  # (expression, weekday) -> offset in days, PERIOD, or None
_MONTHS: Final = _Bounded(4096)  # (expression, year * 12 + month) -> the start of the month or year named


@lru_cache(maxsize=4096)
def parsed(expression: str, day_ms: int) -> tuple[int | None, str]:
    """dateparser's answer, as the start of its day or period, and the period it names."""
    base = datetime.fromtimestamp(day_ms / 1000, tz=UTC).replace(tzinfo=None)
    parser = DateDataParser(languages=["en"], settings={"RELATIVE_BASE": base, "PREFER_DATES_FROM": _prefer(expression),
                                                        "RETURN_TIME_AS_PERIOD": True})  # fmt: skip
    data = parser.get_date_data(expression.removeprefix("on ").removeprefix("this past "))
    found = data.date_obj
    if found is None:
        return None, ""
    period = str(data.period or "day")
    if period == "year":
        found = found.replace(month=1, day=1)
    elif period == "month":
        found = found.replace(day=1)
    start = found.replace(hour=0, minute=0, second=0, microsecond=0, tzinfo=UTC)
    return int(start.timestamp() * 1000), period


def _prefer(expression: str) -> str:
    future = ("next", "tomorrow", "in ", "this coming", "upcoming", "tonight", "later")
    return "future" if expression.startswith(future) else "past"
