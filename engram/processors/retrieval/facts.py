"""Facts as retrievable nodes: an active FactDecided is a node of kind "fact" with the text
"subject relation value"; decisions follow the fact reconciler's lifecycle (``processors.facts``):
``store`` / ``replace`` activate (a superseded fact stops being active), ``promote`` refreshes an
active fact, ``retract`` / ``prune`` deactivate, anything else changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final, Literal

from engram.processors.retrieval.types import NodeRecord
from engram.schemas.records import EventRef, FactDecided, Layer

FACT_KIND: Final = "fact"
ACTIVATES: Final = frozenset({"store", "replace"})
REFRESHES: Final = frozenset({"promote"})
DEACTIVATES: Final = frozenset({"retract", "prune"})
SCOPE_LAYERS: Final[dict[str, Layer]] = {"system": "SYSTEM", "organization": "ORGANIZATION", "org": "ORGANIZATION",
                                         "team": "TEAM", "user": "USER"}  # fmt: skip


def fact_action(fact: FactDecided, *, present: bool) -> Literal["upsert", "remove", "ignore"]:
    """What a decision does to the fact's node; ``present``: the node exists now."""
    decision = fact["decision"].lower()
    if decision in DEACTIVATES:
        return "remove"
    if decision in ACTIVATES or (decision in REFRESHES and present):
        return "upsert"
    return "ignore"


def fact_record(fact: FactDecided, sources: tuple[EventRef, ...], count: Callable[[str], int]) -> NodeRecord:
    text = f"{fact['subject']} {fact['relation']} {fact['value']}"
    return NodeRecord(
        node_id=fact["fact_id"],
        kind=FACT_KIND,
        layer=SCOPE_LAYERS.get(fact["scope"].lower(), "USER"),
        user_id=fact["user_id"],
        session_id=None,
        text=text,
        tokens=count(text),
        event_time_ms=fact["valid_from_ms"],
        properties={
            "category": fact["category"],
            "decision": fact["decision"],
            "rule": fact["rule"],
            "confidence": f"{fact['confidence']:.3f}",
        },  # fmt: skip
        provenance=sources,
    )
