"""Time in questions: "when did ..." ranks the turns that state a date, and a question that names
a date ranks the turns whose date falls in it.

A turn's date is the one it states (``processors.timeline``: "yesterday" resolved against when it
was said, on the node as ``event_date``/``event_span``); a turn that states none happened when it
was said (its event time). Scores are multiplied, then the ranking is re-sorted (ties keep their
order), so only the order among the candidates given changes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from engram.processors.retrieval.newer import NodeRecords
from engram.processors.retrieval.types import Candidate, NodeRecord
from engram.processors.timeline import DATE_PROPERTY, date_of, named_date

_ASKS_WHEN: Final = re.compile(
    r"^\W*(?:(?:and|so|but)\s+)?(?:(?:since\s+|around\s+|about\s+)?when\b"
    r"|(?:in\s+|on\s+|during\s+)?(?:what|which)\s+(?:year|month|day|date|week|weekend|season|time\s+of\s+year)\b"
    r"|how\s+(?:long|many\s+(?:days|weeks|months|years))\s+(?:ago|before|after|earlier|later)\b"
    r"|how\s+many\s+(?:days|weeks|months|years)\s+(?:had\s+|have\s+)?(?:passed|elapsed|went\s+by)\b)",
    re.IGNORECASE,
)
"""A question that asks for a point in time, or the time between two ("how many weeks passed
between"). A duration ("how long have I had", "how many days did it take") is answered by a turn that
states the duration, not a date."""


def asks_when(query: str) -> bool:
    """Whether the question asks for a date: "When did ...", "In which month ...", "How many days ago ..."."""
    return _ASKS_WHEN.match(query) is not None


def time_match(
    graph: NodeRecords, ranking: Sequence[Candidate], query: str, *, when_boost: float, anchor_boost: float
) -> list[Candidate]:
    """Multiply by ``1 + when_boost`` the score of turns that state a date when ``query`` asks when,
    and by ``1 + anchor_boost`` that of turns whose date overlaps the date ``query`` names."""
    asks = when_boost > 0.0 and asks_when(query)
    named = named_date(query) if anchor_boost > 0.0 else None
    if not asks and named is None:
        return list(ranking)
    anchor = None if named is None else (named.start_ms, named.end_ms)
    out: list[tuple[Candidate, int]] = []
    for i, cand in enumerate(ranking):
        record = graph.node(cand.node_id)
        factor = 1.0
        if record is not None and asks and DATE_PROPERTY in record.properties:
            factor *= 1.0 + when_boost
        if record is not None and anchor is not None and _inside(anchor, record):
            factor *= 1.0 + anchor_boost
        out.append((Candidate(cand.node_id, cand.score * factor, cand.source) if factor != 1.0 else cand, i))
    out.sort(key=lambda pair: (-pair[0].score, pair[1]))
    return [cand for cand, _ in out]


def _inside(anchor: tuple[int, int], record: NodeRecord) -> bool:
    """Whether the turn's date (the one it states, else when it was said) overlaps ``anchor``
    ([start, end) in epoch ms)."""
    start, end = anchor
    stated = date_of(record.properties)
    if stated is None:
        return start <= record.event_time_ms < end
    return stated.start_ms < end and stated.end_ms > start
