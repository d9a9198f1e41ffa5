"""One typed dispatch over the MemoryEvent change union.

`MemoryEvent.change` is a ``(record_name, record)`` tuple (schemas/records.py). Instead of
unpacking it and casting by hand, code asks for the shape it handles:
``node = change_as(event, NodeUpserted)`` is the typed change when the event is a NodeUpserted,
else None.
"""

from __future__ import annotations

from typing import Final, TypeVar, cast

from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    FACT_ACCESSED,
    FACT_DECIDED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    NODE_UPSERTED,
    NODES_ACCESSED,
    RULE_COMMITTED,
    RULE_REJECTED,
    SUBJECT_ERASED,
    EdgeRemoved,
    EdgeUpserted,
    FactAccessed,
    FactDecided,
    MemoryEvent,
    NodeDormant,
    NodeReawakened,
    NodeRemoved,
    NodesAccessed,
    NodeUpserted,
    RuleCommitted,
    RuleRejected,
    SubjectErased,
)

Change = TypeVar(
    "Change",
    NodeUpserted,
    NodeRemoved,
    EdgeUpserted,
    EdgeRemoved,
    FactDecided,
    FactAccessed,
    NodeDormant,
    NodeReawakened,
    RuleCommitted,
    RuleRejected,
    SubjectErased,
    NodesAccessed,
)

KIND_OF_SHAPE: Final[dict[object, str]] = {
    NodeUpserted: NODE_UPSERTED,
    NodeRemoved: NODE_REMOVED,
    EdgeUpserted: EDGE_UPSERTED,
    EdgeRemoved: EDGE_REMOVED,
    FactDecided: FACT_DECIDED,
    FactAccessed: FACT_ACCESSED,
    NodeDormant: NODE_DORMANT,
    NodeReawakened: NODE_REAWAKENED,
    RuleCommitted: RULE_COMMITTED,
    RuleRejected: RULE_REJECTED,
    SubjectErased: SUBJECT_ERASED,
    NodesAccessed: NODES_ACCESSED,
}


def kind_of(event: MemoryEvent) -> str:
    """The change's record name, e.g. ``engram.NodeUpserted``."""
    return event["change"][0]


def change_as(event: MemoryEvent, shape: type[Change]) -> Change | None:
    """The event's change typed as ``shape``, or None when the event is another kind."""
    kind, change = event["change"]
    return cast(Change, change) if kind == KIND_OF_SHAPE[shape] else None


class UnknownChangeError(ValueError):
    """A MemoryEvent whose change kind this version of Engram does not know."""


class ChangeHandler:
    """A typed fold over MemoryEvents: override the kinds you handle; the other known kinds are
    ignored, and an unknown kind goes to ``unknown`` (which raises ``UnknownChangeError``).

    ``dispatch(event, handler)`` calls the method of the event's kind with the typed change, so
    a fold reads ``def node_upserted(self, event, node: NodeUpserted)`` instead of unpacking the
    ``(record_name, record)`` tuple and casting by hand. Empty ``__slots__`` so that a subclass
    may be a ``dataclass(slots=True)``.
    """

    __slots__ = ()

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        """A node was created or updated."""

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        """A node was removed."""

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        """An edge was created or updated."""

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        """An edge was removed."""

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        """The rules decided about a fact (with the rule and the reason)."""

    def fact_accessed(self, event: MemoryEvent, change: FactAccessed) -> None:
        """A facts block was read."""

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        """A node left the hot indexes (dreaming)."""

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        """A dormant node came back."""

    def rule_committed(self, event: MemoryEvent, change: RuleCommitted) -> None:
        """Dreaming committed a rule."""

    def rule_rejected(self, event: MemoryEvent, change: RuleRejected) -> None:
        """Dreaming rejected a candidate (the stage and the reason)."""

    def subject_erased(self, event: MemoryEvent, change: SubjectErased) -> None:
        """Everything of a user is to be erased (``engram forget``)."""

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        """The nodes a compiled context held reached its requester."""

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """A change kind this version does not know (a newer writer's record): raises
        ``UnknownChangeError``. A fold that skips or counts such events overrides this."""
        msg = f"unknown MemoryEvent change kind {kind!r}"
        raise UnknownChangeError(msg)


_METHODS: Final[dict[str, str]] = {
    NODE_UPSERTED: "node_upserted",
    NODE_REMOVED: "node_removed",
    EDGE_UPSERTED: "edge_upserted",
    EDGE_REMOVED: "edge_removed",
    FACT_DECIDED: "fact_decided",
    FACT_ACCESSED: "fact_accessed",
    NODE_DORMANT: "node_dormant",
    NODE_REAWAKENED: "node_reawakened",
    RULE_COMMITTED: "rule_committed",
    RULE_REJECTED: "rule_rejected",
    SUBJECT_ERASED: "subject_erased",
    NODES_ACCESSED: "nodes_accessed",
}


def dispatch(event: MemoryEvent, handler: ChangeHandler) -> None:
    """Call ``handler``'s method for the event's change kind, with the typed change; an unknown
    kind goes to ``handler.unknown`` (by default: raise ``UnknownChangeError``)."""
    kind, change = event["change"]
    method = _METHODS.get(kind)
    if method is None:
        handler.unknown(event, kind)
    else:
        getattr(handler, method)(event, change)
