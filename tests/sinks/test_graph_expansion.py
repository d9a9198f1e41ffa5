"""System 2 through the graph store: the Cypher multi-hop against FalkorDB, and the compiler using it.

The memory: Alice's three turns about a garden (NEXT chain, a concept they REF), a TEAM document
REF'd from her last turn, and data Alice may not see: Bob's USER-layer turn and a SYSTEM note, both
linked to her memory. The worker's in-process view holds Alice's events only (a shared-layer node
lives on another partition); the graph store holds everything.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from engram.infra.config import StackInfo
from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.compiler.config import SYSTEM2_EDGES
from engram.processors.compiler.deliberate import StoreExpansion
from engram.processors.rebac import Viewer
from engram.schemas.records import Layer, MemoryEvent
from engram.sinks.base import SinkConfig, SinkTransientError
from engram.sinks.deadline import BlockingCalls
from engram.sinks.graph.expansion import CypherExpander, DeadlineExpander
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
from engram.sinks.graph.sink import GraphSink
from engram.streams.demo import free_port
from tests.compiler.memory import T0, USER, Fixture, counter, embedder, request
from tests.sinks.events import as_items

pytestmark = pytest.mark.integration

ALICE_LAYERS: frozenset[Layer] = frozenset({"USER", "TEAM"})
QUERY = "How has the garden project changed over time, and what led to the flood?"
ASK = request(QUERY, 400, layers=sorted(ALICE_LAYERS))


def _memory(*, unauthorized: bool) -> tuple[Fixture, Fixture]:
    """(Alice's own events, the shared and foreign ones); ids are fixed by name."""
    own, other = Fixture(), Fixture()
    own.node("t1", "We started planning the community garden in spring.", time_ms=T0)
    own.node("t2", "Tomatoes and basil were the first plants in the garden.", time_ms=T0 + 1000)
    own.node("t3", "The garden flooded after the big storm last week.", time_ms=T0 + 2000)
    own.node("c-garden", "community garden", kind="concept", time_ms=T0)
    for src, dst in (("t1", "t2"), ("t2", "t3")):
        own.edge("NEXT", src, dst)
    for turn in ("t1", "t3"):
        own.edge("REF", turn, "c-garden")
    other.offset = 100
    other.node("team-doc", "Team note: the garden drains into the old creek bed.", layer="TEAM", user_id=None)
    other.edge("REF", "t3", "team-doc", layer="TEAM")
    if unauthorized:
        other.node("bob-1", "Bob's private garden diary entry.", user_id="u-bob", session_id="s-bob")
        other.edge("REF", "team-doc", "bob-1")
        other.node("sys-1", "System: garden records are retained for a year.", layer="SYSTEM", user_id=None)
        other.edge("REF", "t2", "sys-1", layer="SYSTEM")
    return own, other


def _store(stack: StackInfo, graph: str, events: list[MemoryEvent]) -> GraphSink:
    host, port = stack.require_falkordb()
    sink = GraphSink(FalkorExecutor(FalkorConfig(host=host, port=port, graph=graph)), SinkConfig(max_batch=64))
    sink.setup()
    for item in as_items(events):
        sink.add(item)
    sink.flush()
    return sink


@pytest.fixture
def stores(stack: StackInfo, unique_name: str) -> Iterator[dict[str, GraphSink]]:
    """Two graphs: with and without the data Alice may not see."""
    out: dict[str, GraphSink] = {}
    for name, unauthorized in (("full", True), ("clean", False)):
        own, other = _memory(unauthorized=unauthorized)
        out[name] = _store(stack, f"{unique_name}-{name}", own.events + other.events)
    yield out
    for sink in out.values():
        assert isinstance(sink.executor, FalkorExecutor)
        sink.executor.delete_graph()
        sink.close()


def _expand(sink: GraphSink, hops: int = 3) -> StoreExpansion:
    return CypherExpander(sink.executor).expand(["t1"], Viewer(USER), ALICE_LAYERS, SYSTEM2_EDGES, hops, 50)


def test_cypher_expansion_walks_only_what_the_principal_may_see(stores: dict[str, GraphSink]) -> None:
    found = _expand(stores["full"])
    assert found.hops == {"t2": 1, "c-garden": 1, "t3": 2, "team-doc": 3}
    team = next(r for r in found.records if r.node_id == "team-doc")
    assert team.layer == "TEAM" and team.provenance and team.provenance[0]["topic"] == "engram.turns"
    assert {(e.src, e.edge_type, e.dst) for e in found.edges} >= {("t1", "NEXT", "t2"), ("t3", "REF", "team-doc")}
    assert all({e.src, e.dst} <= {"t1", *found.hops} for e in found.edges)
    assert found == _expand(stores["clean"])  # unauthorized data changes nothing, order included
    assert _expand(stores["full"], hops=1).hops == {"t2": 1, "c-garden": 1}


def test_the_worker_expander_reads_the_store_on_its_pool_within_the_budget(stores: dict[str, GraphSink]) -> None:
    calls = BlockingCalls()
    store = DeadlineExpander(CypherExpander(stores["full"].executor), calls)
    try:
        with calls.within(2.0):  # the store gets half of it: plenty for a local FalkorDB
            found = store.expand(["t1"], Viewer(USER), ALICE_LAYERS, SYSTEM2_EDGES, 3, 50)
    finally:
        calls.close()
    assert found == _expand(stores["full"])


def test_deliberate_route_expands_over_the_store_and_reaches_shared_memory(stores: dict[str, GraphSink]) -> None:
    own, _ = _memory(unauthorized=True)
    view = own.view()  # the worker's view: Alice's events only
    local = ContextCompiler(view, embedder(), counter(), BALANCED).compile(ASK)
    store = CypherExpander(stores["full"].executor)
    compiled = ContextCompiler(view, embedder(), counter(), BALANCED, store=store).compile(ASK)
    assert compiled["route"] in {"THEMATIC", "RESEARCH"}, compiled["route_reason"]
    assert not any("graph store" in note for note in compiled["fallbacks"])
    by_id = {item["node_id"]: item for item in compiled["items"]}
    assert "team-doc" in by_id and "team-doc" not in {i["node_id"] for i in local["items"]}
    assert by_id["team-doc"]["provenance"], "a store-only item still cites its source event"
    assert not {"bob-1", "sys-1"} & set(by_id)


def test_an_unreachable_store_falls_back_to_the_in_process_expansion() -> None:
    own, _ = _memory(unauthorized=False)
    view = own.view()
    dead = FalkorExecutor(FalkorConfig(port=free_port(), socket_timeout_s=0.5))
    with pytest.raises(SinkTransientError):
        dead.setup()  # nothing listens there: a real connection failure, on every query too
    store = CypherExpander(dead)
    compiled = ContextCompiler(view, embedder(), counter(), BALANCED, store=store).compile(ASK)
    local = ContextCompiler(view, embedder(), counter(), BALANCED).compile(ASK)
    assert any(note.startswith("graph store unavailable") for note in compiled["fallbacks"])
    assert [i["node_id"] for i in compiled["items"]] == [i["node_id"] for i in local["items"]]
    again = ContextCompiler(view, embedder(), counter(), BALANCED, store=store).compile(ASK)
    assert any("cooling down" in note for note in again["fallbacks"])  # no connect timeout per request
