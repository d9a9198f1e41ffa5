"""How ``MemoryView.apply`` routes each MemoryEvent change kind to the view (processors/retrieval/view.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from engram.processors.trust.erasure import erased_by
from engram.schemas.changes import ChangeHandler
from engram.schemas.records import (
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
    SubjectErased,
)

if TYPE_CHECKING:
    from engram.processors.retrieval.view import MemoryView


class ViewFold(ChangeHandler):
    """One ``MemoryView.apply`` call: routes each change kind to the view and counts the events
    that changed it; ``pending`` collects (node id, row) of nodes to embed at the end."""

    __slots__ = ("applied", "pending", "view")

    def __init__(self, view: MemoryView) -> None:
        self.view = view
        self.pending: list[tuple[str, int]] = []
        self.applied = 0

    def node_upserted(self, event: MemoryEvent, change: NodeUpserted) -> None:
        self.view._upsert(change, tuple(event["sources"]), self.pending)
        self.applied += 1

    def fact_decided(self, event: MemoryEvent, change: FactDecided) -> None:
        self.view._decide_fact(change, tuple(event["sources"]), self.pending)
        self.applied += 1

    def node_removed(self, event: MemoryEvent, change: NodeRemoved) -> None:
        self.view._remove(change["node_id"])
        self.applied += 1

    def edge_upserted(self, event: MemoryEvent, change: EdgeUpserted) -> None:
        self.view._add_edge(change)
        self.applied += 1

    def edge_removed(self, event: MemoryEvent, change: EdgeRemoved) -> None:
        self.view._drop_edge(change["src"], change["dst"], change["edge_id"])
        self.applied += 1

    def node_dormant(self, event: MemoryEvent, change: NodeDormant) -> None:
        self.view._set_dormant(change["node_id"], dormant=True, pending=self.pending)
        self.applied += 1

    def node_reawakened(self, event: MemoryEvent, change: NodeReawakened) -> None:
        self.view._set_dormant(change["node_id"], dormant=False, pending=self.pending)
        self.applied += 1

    def nodes_accessed(self, event: MemoryEvent, change: NodesAccessed) -> None:
        """A compiled context held these nodes: each one access more (processors/retrieval/access.py)."""
        self.applied += self.view._note_access(change["node_ids"], event["event_time_ms"])

    def fact_accessed(self, event: MemoryEvent, change: FactAccessed) -> None:
        """A compiled context showed these facts in its facts block: an access of each fact's node."""
        self.applied += self.view._note_access(change["fact_ids"], event["event_time_ms"])

    def subject_erased(self, event: MemoryEvent, change: SubjectErased) -> None:
        """Every node erasing the user removes (processors/trust/erasure.py), with its edges: those
        the view holds and those that left RAM for its store."""
        user = change["user_id"]
        erased = [r.node_id for r in self.view.records() if erased_by(r.kind, r.user_id, user)]
        erased += [n for n, stub in self.view.stubs().items() if erased_by(stub.kind, stub.user_id, user)]
        for node_id in erased:
            self.view._remove(node_id)
        self.applied += 1

    def unknown(self, event: MemoryEvent, kind: str) -> None:
        """Skipped, as RuleCommitted is: a view fed by a newer writer keeps serving what it knows."""
