"""The date a turn states: relative time ("yesterday", "last Tuesday", "two weeks ago", "next month")
and explicit dates ("on May 3", "in 2018") resolved against when the turn was said.

Substring tests pass the turns that may name a time (~14% of LoCoMo's); in those, regexes find the
candidates (the facts' ``TIME_EXPRESSION`` and explicit calendar dates), and only a match that can name one
date reaches dateparser (``facts.when.resolve``, cached by expression and day). The result is a
function of the text and the said time alone, never the clock: a replay states the same date.

A stated date is a day, week, month or year (``span``) that starts at ``start_ms`` (epoch ms, UTC
midnight); "last week" said on 2023-05-08 is the week of 2023-05-01. On a node it is two
properties, ``event_date`` (ISO day of the start) and ``event_span``.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Final, Literal

from engram.processors.facts.speech import TIME_EXPRESSION
from engram.processors.facts.when import resolve

Span = Literal["day", "week", "month", "year"]
DATE_PROPERTY: Final = "event_date"
SPAN_PROPERTY: Final = "event_span"
SPANS: Final[tuple[Span, ...]] = ("day", "week", "month", "year")
_DAYS: Final[dict[Span, int]] = {"day": 1, "week": 7}

_MONTH: Final = r"(?:(?i:january|february|april|june|july|august|september|october|november|december)|May|March)"
_ORDINAL: Final = r"\d{1,2}(?:st|nd|rd|th)?"
_YEAR: Final = r"(?:19|20)\d{2}"
_EXPLICIT: Final = re.compile(
    rf"\b(?:(?i:on\s+)?{_MONTH}\s+{_ORDINAL}(?:,?\s+{_YEAR})?"  # May 3, 2023
    rf"|(?i:on\s+)?(?i:the\s+)?{_ORDINAL}\s+(?i:of\s+)?{_MONTH}(?:,?\s+{_YEAR})?"  # 3 May 2023, the 3rd of May
    rf"|(?i:in|since|during)\s+{_MONTH}(?:,?\s+{_YEAR})?"  # in May, in March 2023
    rf"|(?i:since)\s+{_YEAR})\b"
)
"""Calendar dates the facts' ``TIME_EXPRESSION`` does not cover. "May" and "March" only capitalised (verbs)."""
_DATEABLE: Final = re.compile(
    r"^(?:yesterday|today|tonight|tomorrow|the\s+day\s+before\s+yesterday|this\s+(?:morning|afternoon|evening)"
    r"|(?:last|next|this|on)\s+(?:week|month|year|night|monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
    r"|(?:a|an|one|two|three|four|five|six|seven|eight|nine|ten|\d+)\s+(?:days?|weeks?|months?|years?)\s+ago"
    rf"|in\s+{_YEAR})$"
)
"""The ``TIME_EXPRESSION`` expressions that name one date ("recently", "every Monday", "last summer" do not)."""
_YEAR_ONLY: Final = re.compile(rf"^(?:in|since)\s+{_YEAR}$")
_MONTH_ONLY: Final = re.compile(rf"^(?:in|since|during)\s+{_MONTH.lower()}(?:,?\s+{_YEAR})?$")
_TIME_WORDS: Final = (
    "yesterday", "today", "tonight", "tomorrow", "ago", "week", "month", "year", "night", "morning", "afternoon",
    "evening", "day", *(month.lower() for month in calendar.month_name if month),
)  # fmt: skip
"""Every ``_DATEABLE`` or ``_EXPLICIT`` expression holds one of these, or four digits (a year)."""
_DIGITS: Final = re.compile(r"\d{4}")
_HAS_YEAR: Final = re.compile(rf"\b{_YEAR}\b")
_SPACES: Final = re.compile(r"\s+")
_LEAD: Final = re.compile(r"^(?:since|during|in|on)\s+(?!\d{4}$)|^since\s+")
"""Dropped before a calendar date is resolved: "since 2016" is the year 2016, and a month or day
without a year is read as the last one before the turn ("in March" said in May is this March)."""


@dataclass(frozen=True, slots=True)
class StatedDate:
    """``start_ms``: the first instant (epoch ms, UTC midnight) of the ``span`` the expression names."""

    start_ms: int
    span: Span

    @property
    def day(self) -> str:
        """The ISO day the span starts on."""
        return _date(self.start_ms).date().isoformat()

    @property
    def end_ms(self) -> int:
        """The first instant after the span (exclusive)."""
        return _end_ms(self.start_ms, self.span)

    def label(self) -> str:
        """How a context states it: "on 2023-05-07", "the week of 2023-05-01", "in 2023-05", "in 2022"."""
        day = self.day
        if self.span == "day":
            return f"on {day}"
        if self.span == "week":
            return f"the week of {day}"
        return f"in {day[:7]}" if self.span == "month" else f"in {day[:4]}"

    def properties(self) -> dict[str, str]:
        return {DATE_PROPERTY: self.day, SPAN_PROPERTY: self.span}


def time_expressions(text: str) -> list[str]:
    """The time expressions of ``text`` in the order they appear, lower-cased, spaces collapsed."""
    return [expression for expression, _ in _found(text)]


def stated_date(text: str, said_at_ms: int) -> StatedDate | None:
    """The first date ``text`` names, resolved against ``said_at_ms``; None when it names none."""
    for expression in _dateable(text):
        start = resolve(_LEAD.sub("", expression), said_at_ms)
        if start is not None:
            return StatedDate(start, _span(expression))
    return None


@lru_cache(maxsize=1024)  # a question's: the search reads it twice (its lists, then its reranks)
def named_date(text: str) -> StatedDate | None:
    """The first calendar date ``text`` names with its year ("on May 3, 2023", "in March 2023", "in
    2022"): a date that needs no said time, as a question names one. None when it names none."""
    for expression in _dateable(text):
        if _HAS_YEAR.search(expression):
            start = resolve(_LEAD.sub("", expression), 0)
            if start is not None:
                return StatedDate(start, _span(expression))
    return None


def date_properties(text: str, said_at_ms: int) -> dict[str, str]:
    """The node properties of the date ``text`` states (empty when none)."""
    stated = stated_date(text, said_at_ms)
    return {} if stated is None else stated.properties()


def date_of(properties: Mapping[str, str]) -> StatedDate | None:
    """The stated date a node's properties hold (None: none, or not one this module wrote)."""
    day, span = properties.get(DATE_PROPERTY), properties.get(SPAN_PROPERTY)
    if day is None or span is None:
        return None
    return _read(day, span)


@lru_cache(maxsize=4096)
def _read(day: str, span: str) -> StatedDate | None:
    if span not in SPANS:
        return None
    try:
        parsed = datetime.strptime(day, "%Y-%m-%d").replace(tzinfo=UTC)
    except ValueError:
        return None
    return StatedDate(int(parsed.timestamp() * 1000), _as_span(span))


@lru_cache(maxsize=4096)
def _end_ms(start_ms: int, span: Span) -> int:
    start = _date(start_ms)
    if span in _DAYS:
        end = start + timedelta(days=_DAYS[span])
    elif span == "month":
        end = start.replace(year=start.year + start.month // 12, month=start.month % 12 + 1, day=1)
    else:
        end = start.replace(year=start.year + 1, month=1, day=1)
    return int(datetime(end.year, end.month, end.day, tzinfo=UTC).timestamp() * 1000)


def _found(text: str) -> list[tuple[str, bool]]:
    """Each time expression with whether it is a calendar date (``_EXPLICIT``), in text order."""
    found = [(m.start(), m.group(), False) for m in TIME_EXPRESSION.finditer(text)]
    found += [(m.start(), m.group(), True) for m in _EXPLICIT.finditer(text)]
    return [(_SPACES.sub(" ", expression.strip(" ,").lower()), explicit) for _, expression, explicit in sorted(found)]


def _may_name_time(text: str) -> bool:
    """A necessary condition for a dateable expression, cheap enough for every turn: substring tests
    cost ~6 µs a LoCoMo turn where the two regexes cost ~65 µs; 14% of turns pass."""
    low = text.lower()
    return any(word in low for word in _TIME_WORDS) or _DIGITS.search(text) is not None


def _dateable(text: str) -> Iterator[str]:
    if not _may_name_time(text):
        return
    for expression, explicit in _found(text):
        if explicit or _DATEABLE.match(expression):
            yield expression


def _span(expression: str) -> Span:
    if "year" in expression or _YEAR_ONLY.match(expression):
        return "year"
    if "month" in expression or _MONTH_ONLY.match(expression):
        return "month"
    return "week" if "week" in expression else "day"


def _as_span(span: str) -> Span:
    return next(s for s in SPANS if s == span)


def _date(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, tz=UTC)
