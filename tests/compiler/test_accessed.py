"""What a compiled context accessed (processors/compiler/accessed.py): the nodes and facts its
requester receives, nothing the knapsack left out."""

from __future__ import annotations

from engram.processors.compiler.accessed import changes_search, context_accesses
from engram.processors.compiler.items import FACTS_KIND
from engram.processors.facts import facts_block
from engram.processors.facts.model import CandidateFact, UserFacts
from engram.processors.facts.reconciler import FactReconciler
from engram.processors.retrieval.access import ACCESS_STEP_MS
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.records import (
    NODE_UPSERTED,
    CompiledContext,
    ContextItem,
    ContextRequest,
    EventRef,
    FactAccessed,
    MemoryEvent,
    NodesAccessed,
)

REQUEST_REF: EventRef = {"topic": "engram.context.requests", "partition": 0, "offset": 12}


def request(request_id: str = "r1") -> ContextRequest:
    return {
        "request_id": request_id, "user_id": "ada", "session_id": "s", "query": "where do I live?",
        "token_budget": 500, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
        "event_time_ms": 50_000,
    }  # fmt: skip


def item(node_id: str, kind: str = "event") -> ContextItem:
    return {
        "node_id": node_id, "kind": kind, "text": node_id, "score": 1.0, "relevance": 1.0, "ppr": 0.0,
        "decay": 1.0, "tokens": 3, "pinned": False, "layer": "USER", "provenance": [],
    }  # fmt: skip


def compiled(*items: ContextItem) -> CompiledContext:
    return {
        "request_id": "r1", "user_id": "ada", "session_id": "s", "query": "where do I live?", "route": "fast",
        "route_reason": "", "intent": "factual", "cache_hit": False, "partial": False, "fallbacks": [],
        "token_budget": 500, "total_tokens": 3 * len(items), "items": list(items), "timings_ms": {},
    }  # fmt: skip


def facts_read() -> MemoryEvent:
    state = UserFacts("ada")
    FactReconciler().reconcile(state, [CandidateFact("user", "lives_in", "Berlin", 0.9)], event_time_ms=1_000)
    text, event = facts_block(state, "ada", request_id="r1", event_time_ms=50_000, sources=[REQUEST_REF])
    assert text and event is not None
    return event


def accessed_nodes(events: list[MemoryEvent]) -> list[str]:
    return [n for e in events if (a := change_as(e, NodesAccessed)) is not None for n in a["node_ids"]]


def test_a_facts_block_the_knapsack_dropped_is_no_access() -> None:
    events = context_accesses(compiled(item("n1"), item("n2")), request(), REQUEST_REF, [facts_read()])
    assert [change_as(e, FactAccessed) for e in events] == [None]
    assert accessed_nodes(events) == ["n1", "n2"]


def test_a_facts_block_in_the_context_accesses_the_facts_it_shows() -> None:
    read = facts_read()
    events = context_accesses(compiled(item("facts-1", FACTS_KIND), item("n1")), request(), REQUEST_REF, [read])
    assert events[0] is read
    assert accessed_nodes(events) == ["n1"]  # the block itself is not a node


def test_the_nodes_accessed_are_exactly_the_node_items_in_context_order() -> None:
    events = context_accesses(compiled(item("n3"), item("n1"), item("n3")), request(), REQUEST_REF)
    assert accessed_nodes(events) == ["n3", "n1"]
    (event,) = events
    assert event["key"] == "ada" and event["event_time_ms"] == 50_000 and event["sources"] == [REQUEST_REF]


def test_an_empty_context_accesses_nothing() -> None:
    assert context_accesses(compiled(), request(), REQUEST_REF, [facts_read()]) == []


def test_the_event_id_derives_from_the_request() -> None:
    again = context_accesses(compiled(item("n1")), request(), REQUEST_REF)
    same = context_accesses(compiled(item("n1")), request(), REQUEST_REF)
    other = context_accesses(compiled(item("n1")), request("r2"), REQUEST_REF)
    assert again[0]["event_id"] == same[0]["event_id"] != other[0]["event_id"]


def test_reads_do_not_change_what_a_search_finds() -> None:
    node = memory_event("ada", 1, [], NODE_UPSERTED, node_upserted("n1", "event", "USER", 1, text="x"))
    read = context_accesses(compiled(item("n1")), request(), REQUEST_REF)[0]
    assert changes_search(node) and not changes_search(read) and not changes_search(facts_read())


def test_a_fact_the_block_shows_and_an_item_holds_is_accessed_once() -> None:
    read = facts_read()
    accessed = change_as(read, FactAccessed)
    assert accessed is not None
    (fact_id,) = accessed["fact_ids"]
    both = compiled(item("facts-1", FACTS_KIND), item(fact_id, "fact"), item("n1"))
    assert accessed_nodes(context_accesses(both, request(), REQUEST_REF, [read])) == ["n1"]
    alone = compiled(item(fact_id, "fact"), item("n1"))  # the block left out: the item is the access
    assert accessed_nodes(context_accesses(alone, request(), REQUEST_REF, [read])) == [fact_id, "n1"]


def test_a_node_used_within_the_hour_is_not_named_again_and_one_used_an_hour_ago_is() -> None:
    """A session asking about the same things all hour sends no access per request (the view's
    last recorded use of each item decides: processors/retrieval/access.py)."""
    asked: ContextRequest = {**request(), "event_time_ms": 10 * ACCESS_STEP_MS}
    at = asked["event_time_ms"]
    last = {"n1": at - ACCESS_STEP_MS + 1, "n2": at - ACCESS_STEP_MS}
    held = compiled(item("n1"), item("n2"), item("n3"))
    (event,) = context_accesses(held, asked, REQUEST_REF, (), lambda node_id: last.get(node_id, -1))
    accessed = change_as(event, NodesAccessed)
    assert accessed is not None and accessed["node_ids"] == ["n2", "n3"]
    assert context_accesses(compiled(item("n1")), asked, REQUEST_REF, (), lambda node_id: last["n1"]) == []
