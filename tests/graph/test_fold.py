"""MemoryEvents → graph: node types, mapped edges and the reasoning edges the fold derives."""

from __future__ import annotations

from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.fold import derived_edge_id
from engram.processors.graph.store import GraphStore
from engram.processors.graph.subgraph import Subgraph
from engram.processors.graph.types import EdgeType, Principal
from engram.processors.trace.builder import event_node_id
from tests.retrieval.builders import USER, Events


def _edges(store: GraphStore) -> set[tuple[str, str, str]]:
    return {(EdgeType(int(store.edge_type[e])).name, store.ids[int(store.src[e])], store.ids[int(store.dst[e])])
            for e in range(store.edge_count) if store.edge_alive[e]}  # fmt: skip


def _turn(turn_id: str) -> str:
    return event_node_id(USER, turn_id)


def _log() -> Events:
    log = Events()
    log.node(_turn("t1"), "I moved to Berlin").node(_turn("t2"), "Actually I live in Rome now")
    log.node(_turn("t3"), "I will book the flight").edge("NEXT", _turn("t1"), _turn("t2"))
    log.edge("CAUSAL", _turn("t2"), _turn("t3"))
    log.fact("f-berlin", "user", "lives_in", "Berlin", turns=("t1",))
    log.fact("f-rome", "user", "lives_in", "Rome", "replace", supersedes="f-berlin", turns=("t2",))
    log.fact("f-rome", "user", "lives_in", "Rome", "skip_duplicate", turns=("t3",))
    log.fact("f-flight", "user", "will", "book the flight", category="task", turns=("t3",))
    return log


def test_fold_types_nodes_and_derives_supports_and_supersedes() -> None:
    engine = GraphEngine()
    engine.apply(_log().events)
    store = engine.store
    kinds = {store.ids[r]: int(store.node_type[r]) for r in range(len(store))}
    assert kinds["f-berlin"] == 0 and kinds["f-flight"] == 1 and kinds["f-rome"] == 3  # fact, decision, correction
    assert kinds[_turn("t1")] == 5  # episode
    assert _edges(store) >= {
        ("TEMPORAL_NEXT", _turn("t1"), _turn("t2")),
        ("CAUSED_BY", _turn("t3"), _turn("t2")),  # Engram's CAUSAL runs cause → effect: reversed
        ("SUPPORTS", _turn("t1"), "f-berlin"),
        ("SUPPORTS", _turn("t2"), "f-rome"),
        ("SUPPORTS", _turn("t3"), "f-rome"),  # the duplicate adds support
        ("SUPERSEDES", "f-rome", "f-berlin"),
        ("SUPPORTS", _turn("t3"), "f-flight"),
    }
    assert store.edge_index[derived_edge_id(EdgeType.SUPERSEDES, "f-rome", "f-berlin")] >= 0


def test_a_retraction_contradicts_and_a_prune_removes() -> None:
    log = _log()
    log.node(_turn("t4"), "I never planned that trip").fact(
        "f-flight", "user", "will", "book", "retract", turns=("t4",)
    )
    log.fact("f-berlin", "user", "lives_in", "Berlin", "prune")
    engine = GraphEngine()
    engine.apply(log.events)
    assert ("CONTRADICTS", _turn("t4"), "f-flight") in _edges(engine.store)
    sub = Subgraph(engine.store, Principal.of(USER))
    assert sub.find("f-berlin") is None
    flight = sub.find("f-flight")
    assert flight is not None and sub.retracted[flight]


def test_replaying_the_same_events_gives_the_same_rows_and_answers() -> None:
    events = _log().events
    first, second = GraphEngine(), GraphEngine()
    first.apply(events)
    second.apply(events[:3])
    second.apply(events[3:])
    second.apply(events)  # a replay over what is already there changes nothing
    assert first.store.ids == second.store.ids
    assert _edges(first.store) == _edges(second.store)
    principal = Principal.of(USER)
    query = GraphQuery("revise", {"node": _turn("t2")})
    assert first.run(principal, query) == second.run(principal, query)


def test_revising_a_turn_drops_the_facts_only_it_supports() -> None:
    engine = GraphEngine()
    engine.apply(_log().events)
    result = engine.run(Principal.of(USER), GraphQuery("revise", {"node": _turn("t3")}))
    falls = {a.node_id for a in result.affected if a.falls}
    assert "f-flight" in falls and "f-flight" in result.invalidated_decisions
    assert "f-rome" not in falls  # t2 still supports it
