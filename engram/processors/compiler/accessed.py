"""What a compiled context accessed: only what its requester receives counts as used.

A node is accessed when it is an item of the compiled context the requester gets; the facts block's
facts are accessed when the block is an item (the knapsack may leave it out, like any item). Each
access is a MemoryEvent on engram.memory, citing the request, so the view and the dream state count
it in offset order and a replay counts it again the same way (processors/retrieval/access.py,
processors/dreaming/prune.py).

Reads change no search result, so they do not age the SLB's entries (``changes_search``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from engram.processors.compiler.items import FACTS_KIND
from engram.schemas.changes import change_as, kind_of
from engram.schemas.events import memory_event, nodes_accessed
from engram.schemas.records import (
    FACT_ACCESSED,
    NODES_ACCESSED,
    CompiledContext,
    ContextRequest,
    EventRef,
    FactAccessed,
    MemoryEvent,
)

READS: Final = frozenset({FACT_ACCESSED, NODES_ACCESSED})


def context_accesses(
    compiled: CompiledContext, request: ContextRequest, source: EventRef, facts_read: Sequence[MemoryEvent] = ()
) -> list[MemoryEvent]:
    """The access events of ``compiled``: ``facts_read`` (the FactAccessed of the facts block offered
    to the compiler) when the block is one of its items, then one NodesAccessed for its node items,
    in context order, each id once (none when it holds no node). A fact the block shows and an item
    holds too is accessed once, by the block's event. Keyed by the requester, at the request's
    event time; the event id derives from the request id and ``source``."""
    items = compiled["items"]
    out = list(facts_read) if any(item["kind"] == FACTS_KIND for item in items) else []
    shown = {f for event in out if (read := change_as(event, FactAccessed)) is not None for f in read["fact_ids"]}
    node_ids = [n for n in dict.fromkeys(i["node_id"] for i in items if i["kind"] != FACTS_KIND) if n not in shown]
    if node_ids:
        change = nodes_accessed(node_ids, request["request_id"])
        out.append(memory_event(request["user_id"], request["event_time_ms"], [source], NODES_ACCESSED, change))
    return out


def changes_search(event: MemoryEvent) -> bool:
    """Whether ``event`` may change what a search finds (an access does not: it is a read)."""
    return kind_of(event) not in READS
