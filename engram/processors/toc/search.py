"""Index-free agentic search over the TOC (seed 002), and time anchors in questions.

``time_anchor(query, now_ms)`` reads an explicit time reference relative to the request's event
time: "yesterday", "today", "last/this week|month|year", "N days|weeks|months ago", "in May
[2023]", "on 8 May 2023", "in 2022", and "before|after <one of those>". None when there is none.

``toc_search`` answers without any index: with an anchor it keeps the segments inside the anchored
range; otherwise it descends from the years, best-first, scoring each period by the overlap of the
query's terms with its keywords and summary (seed 002's progressive disclosure: read the summary,
drill down, move laterally), and finally ranks the segments' episodes by term overlap. It stops
at ``TocBounds`` (seed 002's defaults: depth 5, 100 nodes visited, beam width), and says which
path it took and whether a bound cut it short.
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

from engram.processors.retrieval.text import query_terms, terms
from engram.processors.toc.index import LEVELS, TocIndex

DAY_MS: Final = 86_400_000
_MONTHS: Final = {name.lower(): i for i, name in enumerate(calendar.month_name) if name}
_UNITS: Final = {"day": 1, "week": 7, "month": 30, "year": 365}
_RELATIVE: Final = re.compile(r"\b(\d+|a|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b")
_LAST: Final = re.compile(r"\b(last|this|past)\s+(week|month|year)\b")
_IN_MONTH: Final = re.compile(r"\b(?:in|during)\s+(" + "|".join(_MONTHS) + r")(?:\s+(\d{4}))?\b")
_ON_DATE: Final = re.compile(r"\bon\s+(\d{1,2})\s+(" + "|".join(_MONTHS) + r")(?:,?\s+(\d{4}))?\b")
_IN_YEAR: Final = re.compile(r"\bin\s+((?:19|20)\d{2})\b")
_SIDE_MONTH: Final = re.compile(r"\b(?:before|after)\s+(" + "|".join(_MONTHS) + r")(?:\s+(\d{4}))?\b")
_SIDE: Final = re.compile(r"\b(before|after)\b")
_WORDS: Final = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}


@dataclass(frozen=True, slots=True)
class TimeRange:
    start_ms: int  # inclusive
    end_ms: int  # exclusive

    def contains(self, start_ms: int, end_ms: int) -> bool:
        """Whether [start_ms, end_ms) overlaps this range."""
        return start_ms < self.end_ms and end_ms > self.start_ms


def time_anchor(query: str, now_ms: int) -> TimeRange | None:
    text = query.lower()
    now = datetime.fromtimestamp(now_ms / 1000.0, tz=UTC)
    today = datetime(now.year, now.month, now.day, tzinfo=UTC)
    found = _anchor(text, now, today)
    if found is None:
        return None
    side = _SIDE.search(text)
    if side is not None and side.group(1) == "before":
        return TimeRange(0, found.start_ms)
    if side is not None:
        return TimeRange(found.end_ms, now_ms + 1)
    return found


def _anchor(text: str, now: datetime, today: datetime) -> TimeRange | None:
    if "yesterday" in text:
        return _range(today - timedelta(days=1), today)
    if re.search(r"\btoday\b", text):
        return _range(today, today + timedelta(days=1))
    if (m := _RELATIVE.search(text)) is not None:
        n = int(m.group(1)) if m.group(1).isdigit() else _WORDS[m.group(1)]
        centre = today - timedelta(days=n * _UNITS[m.group(2)])
        half = timedelta(days=max(1, _UNITS[m.group(2)] // 2))
        return _range(centre - half, centre + half + timedelta(days=1))
    if (m := _LAST.search(text)) is not None:
        return _last(m.group(1), m.group(2), now, today)
    if (m := _ON_DATE.search(text)) is not None:
        year = int(m.group(3)) if m.group(3) else now.year
        try:
            day = datetime(year, _MONTHS[m.group(2)], int(m.group(1)), tzinfo=UTC)
        except ValueError:  # "on 31 February": no such day, so no anchor
            return None
        return _range(day, day + timedelta(days=1))
    if (m := _IN_MONTH.search(text) or _SIDE_MONTH.search(text)) is not None:
        month = _MONTHS[m.group(1)]
        year = int(m.group(2)) if m.group(2) else (now.year if month <= now.month else now.year - 1)
        return _range(datetime(year, month, 1, tzinfo=UTC), _next_month(year, month))
    if (m := _IN_YEAR.search(text)) is not None:
        year = int(m.group(1))
        return _range(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))
    return None


def _last(which: str, unit: str, now: datetime, today: datetime) -> TimeRange:
    if unit == "week":
        monday = today - timedelta(days=today.weekday())
        start = monday if which == "this" else monday - timedelta(days=7)
        return _range(start, start + timedelta(days=7))
    if unit == "month":
        first = datetime(now.year, now.month, 1, tzinfo=UTC)
        if which == "this":
            return _range(first, _next_month(now.year, now.month))
        prev = first - timedelta(days=1)
        return _range(datetime(prev.year, prev.month, 1, tzinfo=UTC), first)
    year = now.year if which == "this" else now.year - 1
    return _range(datetime(year, 1, 1, tzinfo=UTC), datetime(year + 1, 1, 1, tzinfo=UTC))


def _next_month(year: int, month: int) -> datetime:
    return datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=UTC)


def _range(start: datetime, end: datetime) -> TimeRange:
    return TimeRange(int(start.timestamp() * 1000), int(end.timestamp() * 1000))


@dataclass(frozen=True, slots=True)
class TocBounds:
    """Seed 002's safety bounds for agentic search."""

    max_depth: int = 5
    max_nodes_visited: int = 100
    beam_width: int = 2
    max_results: int = 20


@dataclass(slots=True)
class TocSearchResult:
    episodes: list[tuple[str, float]] = field(default_factory=list)  # (node id, score), best first
    path: list[str] = field(default_factory=list)  # periods read, in order
    anchor: TimeRange | None = None
    stopped: str = ""  # the bound that cut the search short, if any


def toc_search(
    index: TocIndex, texts: Mapping[str, str], keywords: Mapping[str, set[str]], query: str, *, now_ms: int,
    bounds: TocBounds = TocBounds(),
) -> TocSearchResult:  # fmt: skip
    """See the module docstring. ``texts``: episode id → text; ``keywords``: period key → the
    terms of its summary (what the agent reads at each level)."""
    wanted = set(query_terms(query))
    result = TocSearchResult(anchor=time_anchor(query, now_ms))
    if result.anchor is not None:
        segments = [
            k for k, p in sorted(index.periods.items())
            if p.level == "segment" and result.anchor.contains(p.start_ms, p.end_ms)
        ]  # fmt: skip
        result.path = segments[: bounds.max_nodes_visited]
        if len(segments) > bounds.max_nodes_visited:
            result.stopped = "max_nodes_visited"
    else:
        result.path, result.stopped = _descend(index, keywords, wanted, bounds)
    ranked: list[tuple[str, float]] = []
    for key in result.path:
        period = index.periods[key]
        for node_id in sorted(period.episodes):
            overlap = len(wanted & set(terms(texts.get(node_id, ""))))
            if overlap or result.anchor is not None:
                ranked.append((node_id, overlap / max(1, len(wanted))))
    ranked.sort(key=lambda pair: (-pair[1], pair[0]))
    result.episodes = ranked[: bounds.max_results]
    return result


def _descend(
    index: TocIndex, keywords: Mapping[str, set[str]], wanted: set[str], bounds: TocBounds
) -> tuple[list[str], str]:
    frontier = index.roots()
    read: list[str] = []
    for depth in range(min(bounds.max_depth, len(LEVELS))):
        scored = sorted(frontier, key=lambda k: (-len(wanted & keywords.get(k, set())), k))
        read.extend(scored)
        if len(read) >= bounds.max_nodes_visited:
            return [k for k in read if index.periods[k].level == "segment"][: bounds.max_nodes_visited], (
                "max_nodes_visited"
            )
        if depth == len(LEVELS) - 1:
            break
        best = [k for k in scored if wanted & keywords.get(k, set())][: bounds.beam_width] or scored[:1]
        frontier = sorted(c for k in best for c in index.periods[k].children)
    return [k for k in read if index.periods[k].level == "segment"], ""
