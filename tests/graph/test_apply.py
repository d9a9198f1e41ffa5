"""An applied consolidation: MemoryEvents with reasons, that bring the graph to a fixpoint."""

from __future__ import annotations

from typing import cast

from engram.processors.graph.apply import ApplyContext
from engram.processors.graph.engine import GraphEngine, GraphQuery
from engram.processors.graph.results import Consolidation
from engram.processors.graph.types import Principal
from engram.schemas.records import EDGE_UPSERTED, NODE_DORMANT, NODE_UPSERTED, EdgeUpserted, MemoryEvent, NodeUpserted
from tests.retrieval.builders import USER, Events

CTX = ApplyContext(USER, 1_000, [{"topic": "engram.graph.requests", "partition": 0, "offset": 7}])
PRINCIPAL = Principal.of(USER)


def _memory() -> Events:
    log = Events()
    log.node("a", "the deploy runs on friday afternoons").node("b", "the deploy runs on friday afternoons!")
    log.node("c", "the cache is enabled", kind="fact").node("d", "the cache is not enabled", kind="fact")
    log.node("e1", "evidence one").node("e2", "evidence two").node("e3", "evidence three")
    log.node("rule", "deploys fail on fridays", kind="rule", properties={"confidence": "0.95", "source": "dream"})
    for evidence in ("e1", "e2", "e3"):
        log.edge("SUPPORTS", evidence, "rule")
    return log


def _changes(events: list[MemoryEvent], kind: str) -> list[object]:
    return [event["change"][1] for event in events if event["change"][0] == kind]


def test_applying_emits_events_with_reasons_and_a_second_run_finds_nothing() -> None:
    engine = GraphEngine()
    engine.apply(_memory().events)
    answer = engine.answer(PRINCIPAL, GraphQuery("consolidate", {}), CTX)
    report = answer.result
    assert isinstance(report, Consolidation) and report.applied and report.events == len(answer.events)
    assert len(_changes(answer.events, NODE_DORMANT)) == 1
    edges = {e["edge_type"]: e for e in cast(list[EdgeUpserted], _changes(answer.events, EDGE_UPSERTED))}
    assert edges["SUPERSEDES"]["dst"] in {"a", "b"}
    assert edges["SUPERSEDES"]["properties"]["reason"].startswith("duplicate of")
    assert {edges["CONTRADICTS"]["src"], edges["CONTRADICTS"]["dst"]} == {"c", "d"}
    (promoted,) = cast(list[NodeUpserted], _changes(answer.events, NODE_UPSERTED))
    assert promoted["node_id"] == "rule" and promoted["text"] == "deploys fail on fridays"
    assert promoted["properties"] == {
        "confidence": "0.95", "source": "dream", "memory_type": "fact", "promoted_by": "graph.consolidate",
        "reason": "inference held above 0.9 confidence with 3 or more supporters",
    }  # fmt: skip
    assert all(event["key"] == USER and event["sources"] == CTX.sources for event in answer.events)

    again = engine.answer(PRINCIPAL, GraphQuery("consolidate", {}), CTX)
    assert again.events == answer.events  # the same request gives the same events: sinks apply them once
    engine.apply(answer.events)
    after = engine.run(PRINCIPAL, GraphQuery("consolidate", {}))
    assert (after.duplicates, after.contradictions, after.promotions) == ([], [], [])


def test_the_engine_keeps_an_upsert_record_for_inferences_only() -> None:
    engine = GraphEngine()
    engine.apply(_memory().events)
    assert _kept(engine) == {"rule"}  # the one inference: what a promotion upserts again
    engine.apply(engine.answer(PRINCIPAL, GraphQuery("consolidate", {}), CTX).events)
    assert _kept(engine) == set(), "a promoted inference (now a fact) still holds its record"


def _kept(engine: GraphEngine) -> set[str]:
    return {engine.store.ids[row] for row in engine.store.records}


def test_only_a_consolidation_can_be_applied() -> None:
    engine = GraphEngine()
    engine.apply(_memory().events)
    try:
        engine.answer(PRINCIPAL, GraphQuery("pagerank", {}), CTX)
    except ValueError as exc:
        assert "only a consolidation" in str(exc)
    else:
        msg = "pagerank was applied"
        raise AssertionError(msg)


def _timeline(cause_of_next: bool) -> Events:
    """One session's episodes p -> a -> b -> n along NEXT, a and b duplicates; b, when
    ``cause_of_next``, the cause of n."""
    log = Events()
    log.node("p", "we planned the launch for monday").node("a", "the deploy runs on friday afternoons")
    log.node("b", "the deploy runs on friday afternoons!").node("n", "the launch went fine after all")
    for src, dst in (("p", "a"), ("a", "b"), ("b", "n")):
        log.edge("NEXT", src, dst)
    if cause_of_next:
        log.edge("CAUSAL", "b", "n")
    return log


def test_an_applied_duplicate_keeps_forgettings_invariants_at_once() -> None:
    """Invariant 1: the NEXT path through the active episodes is contracted around the duplicate
    made dormant (an edge marked contracted), not left broken until the next dream."""
    engine = GraphEngine()
    engine.apply(_timeline(cause_of_next=False).events)
    answer = engine.answer(PRINCIPAL, GraphQuery("consolidate", {}), CTX)
    [dormant] = cast(list[dict[str, str]], _changes(answer.events, NODE_DORMANT))
    gone = dormant["node_id"]
    kept = "a" if gone == "b" else "b"
    nexts = [e for e in cast(list[EdgeUpserted], _changes(answer.events, EDGE_UPSERTED)) if e["edge_type"] == "NEXT"]
    expected = ("p", kept) if gone == "a" else (kept, "n")
    assert [(e["src"], e["dst"], e["properties"]["contracted"]) for e in nexts] == [(*expected, "true")]


def test_a_duplicate_that_caused_an_active_node_stays_active() -> None:
    """Invariant 2: no dormant episode is the causal parent of an active node."""
    engine = GraphEngine()
    engine.apply(_timeline(cause_of_next=True).events)
    answer = engine.answer(PRINCIPAL, GraphQuery("consolidate", {}), CTX)
    assert "b" not in [d["node_id"] for d in cast(list[dict[str, str]], _changes(answer.events, NODE_DORMANT))]
