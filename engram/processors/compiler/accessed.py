"""What a compiled context accessed: only what its requester receives counts as used.

A node is accessed when it is an item of the compiled context the requester gets; the facts block's
facts are accessed when the block is an item (the knapsack may leave it out, like any item). Each
access is a MemoryEvent on engram.memory, citing the request, so the view and the dream state count
it in offset order and a replay counts it again the same way (processors/retrieval/access.py,
processors/dreaming/prune.py).

A node is named at most once per ``ACCESS_STEP_MS`` of event time (processors/retrieval/access.py:
``due``, against the view's last recorded use), so a session asking about the same things all hour
sends no access event per request. Reads change no search result, so they do not age the SLB's
entries (``changes_search``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Final

from engram.processors.compiler.items import FACTS_KIND
from engram.processors.retrieval.access import due
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
    compiled: CompiledContext, request: ContextRequest, source: EventRef, facts_read: Sequence[MemoryEvent] = (),
    last_access: Callable[[str], int] = lambda _: -1,
) -> list[MemoryEvent]:  # fmt: skip
    """The access events of ``compiled``: ``facts_read`` (the FactAccessed of the facts block offered
    to the compiler) when the block is one of its items and the use of one of its facts is ``due``
    after its ``last_access``, then one NodesAccessed for its node items whose use is due, in
    context order, each id once (none when it holds no such node). A fact the block shows and an
    item holds too is accessed once, by the block's event. Keyed by the requester, at the request's
    event time; the event id derives from the request id and ``source``."""
    items = compiled["items"]
    at_ms = request["event_time_ms"]
    out = list(facts_read) if any(item["kind"] == FACTS_KIND for item in items) else []
    shown = {f for event in out if (read := change_as(event, FactAccessed)) is not None for f in read["fact_ids"]}
    if shown and not any(due(last_access(f), at_ms) for f in shown):
        out = []  # every fact the block shows was used this hour already
    held = dict.fromkeys(i["node_id"] for i in items if i["kind"] != FACTS_KIND)
    node_ids = [n for n in held if n not in shown and due(last_access(n), at_ms)]
    if node_ids:
        change = nodes_accessed(node_ids, request["request_id"])
        out.append(memory_event(request["user_id"], at_ms, [source], NODES_ACCESSED, change))
    return out


def changes_search(event: MemoryEvent) -> bool:
    """Whether ``event`` may change what a search finds (an access does not: it is a read)."""
    return kind_of(event) not in READS
