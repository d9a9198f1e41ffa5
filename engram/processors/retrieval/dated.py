"""Time in questions: "when did ..." ranks the turns that state a date, and a question that names
a date ranks the turns whose date falls in it, and finds them: a memory that can search by time
(`DatedMemory`) adds the best of those turns to the vector and BM25 lists (`with_dated`), so a turn
the question's words alone miss ("dyed my hair last week", asked "what did he change in April
2022?") is ranked with the rest.

A turn's date is the one it states (``processors.timeline``: "yesterday" resolved against when it
was said, on the node as ``event_date``/``event_span``); a turn that states none happened when it
was said (its event time). Scores are multiplied, then the ranking is re-sorted (ties keep their
order), so only the order among the candidates given changes.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Sequence
from typing import Final, Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

from engram.processors.rebac import Viewer
from engram.processors.retrieval.newer import NodeRecords
from engram.processors.retrieval.types import Candidate, NodeRecord
from engram.processors.timeline import DATE_PROPERTY, date_of, named_date
from engram.schemas.records import Layer

Window = tuple[int, int]  # [start, end) in epoch ms
NO_TIME: Final[Window] = (-1, -1)


@runtime_checkable
class DatedMemory(Protocol):
    """A memory that can search among the nodes of a time (`MemoryView.dated_lists`)."""

    def dated_lists(
        self, query: str, query_vector: npt.NDArray[np.float32] | None, window: Window, k: int, viewer: Viewer,
        layers: Collection[Layer], kinds: Collection[str] | None = None,
    ) -> dict[str, list[Candidate]]: ...  # fmt: skip


def span_of(record: NodeRecord) -> Window:
    """When the node happened: the date it states, else when it was said (`_inside`'s reading);
    `NO_TIME` for a node without an event time."""
    stated = date_of(record.properties)
    if stated is not None:
        return stated.start_ms, stated.end_ms
    return (record.event_time_ms, record.event_time_ms + 1) if record.event_time_ms > 0 else NO_TIME


def named_window(query: str) -> Window | None:
    """The time a question names with its year ("in May 2022"), None when it names none."""
    named = named_date(query)
    return None if named is None else (named.start_ms, named.end_ms)


def with_dated(
    memory: object, lists: dict[str, list[Candidate]], query: str, query_vector: npt.NDArray[np.float32] | None,
    window: Window, k: int, viewer: Viewer, layers: Collection[Layer], kinds: Collection[str] | None,
) -> dict[str, list[Candidate]]:  # fmt: skip
    """``lists`` with the ``k`` best nodes of ``window`` of each that it did not hold, appended in
    their order at the list's last score: they join the candidates the reranks see (a turn next to
    a match, a soft term match, the named date's boost) without moving the list's own scale. The
    lists as they are when ``memory`` cannot search by time."""
    if not isinstance(memory, DatedMemory):
        return lists
    dated = memory.dated_lists(query, query_vector, window, k, viewer, layers, kinds)
    out = dict(lists)
    for name, found in dated.items():
        held = out.get(name)
        if not held:
            continue
        ids, floor = {c.node_id for c in held}, min(c.score for c in held)
        extra = [Candidate(c.node_id, min(c.score, floor), c.source) for c in found if c.node_id not in ids]
        if extra:
            out[name] = sorted([*held, *extra], key=lambda c: -c.score)  # stable: ties keep the list's order
    return out


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


def _inside(anchor: Window, record: NodeRecord) -> bool:
    """Whether the turn's date (the one it states, else when it was said) overlaps ``anchor``
    ([start, end) in epoch ms)."""
    start, end = anchor
    stated = date_of(record.properties)
    if stated is None:
        return start <= record.event_time_ms < end
    return stated.start_ms < end and stated.end_ms > start
