"""Scored pool entries and their conversion to `ContextItem` records."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from engram.processors.retrieval.types import NodeRecord
from engram.processors.timeline import date_of
from engram.schemas.events import stable_id
from engram.schemas.records import ContextItem, EventRef

FACTS_KIND = "facts"


class Scored(NamedTuple):
    """One candidate for the context with its score parts; `owner` is the node's user and `instance`
    its layer instance as written (ReBAC: processors.rebac.is_visible).

    A named tuple rather than a frozen dataclass: a compile builds one per pool node (~100), and a
    frozen dataclass's ``__init__`` (one ``object.__setattr__`` per field) cost 2.3 µs against 0.9."""

    node_id: str
    kind: str
    text: str
    tokens: int
    layer: str
    owner: str | None
    instance: str | None
    event_time_ms: int
    provenance: tuple[EventRef, ...]
    relevance: float
    ppr: float
    decay: float
    score: float
    pinned: bool

    def item(self) -> ContextItem:
        return {
            "node_id": self.node_id,
            "kind": self.kind,
            "text": self.text,
            "score": self.score,
            "relevance": self.relevance,
            "ppr": self.ppr,
            "decay": self.decay,
            "tokens": self.tokens,
            "pinned": self.pinned,
            "layer": self.layer,
            "provenance": [
                {"topic": r["topic"], "partition": r["partition"], "offset": r["offset"]} for r in self.provenance
            ],
        }


def scored_node(record: NodeRecord, relevance: float, ppr: float, decay: float, score: float, pinned: bool) -> Scored:
    return Scored(
        node_id=record.node_id,
        kind=record.kind,
        text=record.text,
        tokens=record.tokens,
        layer=record.layer,
        owner=record.user_id,
        instance=record.instance,
        event_time_ms=record.event_time_ms,
        provenance=record.provenance,
        relevance=relevance,
        ppr=ppr,
        decay=decay,
        score=score,
        pinned=pinned,
    )


def with_stated_date(scored: Scored, record: NodeRecord, count: Callable[[str], int]) -> Scored:
    """The item of a turn that states a date says it: "... yesterday (on 2023-05-07)", its
    ``tokens`` raised by the suffix's (``count``: cl100k tokens of a text), so the budget holds."""
    stated = date_of(record.properties)
    if stated is None:
        return scored
    suffix = f" ({stated.label()})"
    return scored._replace(text=scored.text + suffix, tokens=scored.tokens + count(suffix))


def facts_item(
    user_id: str, text: str, sources: list[EventRef], tokens: int, relevance: float, score: float, time_ms: int
) -> Scored:
    """The user's facts block as one item of kind "facts" (USER layer, provenance = its source events)."""
    return Scored(
        node_id=stable_id(FACTS_KIND, user_id, text),
        kind=FACTS_KIND,
        text=text,
        tokens=tokens,
        layer="USER",
        owner=user_id,
        instance=None,
        event_time_ms=time_ms,
        provenance=tuple(sources),
        relevance=relevance,
        ppr=0.0,
        decay=1.0,
        score=score,
        pinned=False,
    )
