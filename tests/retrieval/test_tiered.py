"""TieredMemory: the reranks' reads over a hot view and a cold store give what the whole view gives."""

from __future__ import annotations

from collections.abc import Sequence

from engram.benchmarks.qdrant_lists import hot_events
from engram.processors.retrieval.hybrid import BALANCED, rank_lists
from engram.processors.retrieval.tiered import ColdNode, TieredMemory
from engram.processors.retrieval.view import MemoryView
from engram.schemas.records import LAYERS
from tests.retrieval.builders import USER, Events, ranking_of

TURNS = ("t0", "t1", "t2", "t3", "t4", "t5")


class DictSource:
    """The cold tier as a dict of what the whole view held (live nodes only), counting batches."""

    def __init__(self, whole: MemoryView, ids: Sequence[str]) -> None:
        self.nodes = {
            n: ColdNode(record, tuple(whole.links(n, LAYERS)))
            for n in ids
            if (record := whole.node(n)) is not None and not whole.is_dormant(n)
        }
        self.batches: list[list[str]] = []

    def cold_nodes(self, node_ids: Sequence[str]) -> dict[str, ColdNode]:
        self.batches.append(list(node_ids))
        return {n: self.nodes[n] for n in node_ids if n in self.nodes}


def _chain(events: Events, ids: Sequence[str]) -> Events:
    for i, node_id in enumerate(ids):
        events.node(node_id, f"turn {i} about the garden", properties={"speaker": "Ann"})
    for src, dst in zip(ids, ids[1:], strict=False):
        events.edge("NEXT", src, dst)
    return events


def _tiers(hot: set[str], *, dormant: str | None = None) -> tuple[MemoryView, TieredMemory, DictSource]:
    events = _chain(Events(), TURNS)
    if dormant is not None:
        events.dormant(dormant)
    whole = MemoryView()
    whole.apply(events.events)
    view = MemoryView()
    view.apply(hot_events(events.events, frozenset(hot)))
    source = DictSource(whole, TURNS)
    return whole, TieredMemory(view, source), source


def test_a_cold_node_reads_as_the_whole_view_holds_it() -> None:
    whole, memory, _ = _tiers({"t4", "t5"})
    assert memory.node("t1") == whole.node("t1")
    assert memory.node("t5") == whole.node("t5")
    assert memory.cold_reads == 1
    assert memory.node("nope") is None


def test_neighbours_cross_the_edge_of_the_hot_set_both_ways() -> None:
    whole, memory, _ = _tiers({"t3", "t4", "t5"})
    for node_id in TURNS:
        assert memory.neighbours(node_id, LAYERS, ("NEXT",)) == whole.neighbours(node_id, LAYERS, ("NEXT",)), node_id


def test_a_dormant_node_is_no_neighbour_in_either_tier() -> None:
    for dormant, hot in (("t2", {"t3", "t4", "t5"}), ("t4", {"t3", "t4", "t5"})):
        whole, memory, _ = _tiers(hot, dormant=dormant)
        for node_id in ("t1", "t3", "t5"):
            expected = whole.neighbours(node_id, LAYERS, ("NEXT",))
            assert memory.neighbours(node_id, LAYERS, ("NEXT",)) == expected, (dormant, node_id)


def test_the_listed_nodes_and_their_neighbours_come_in_two_round_trips() -> None:
    _, memory, source = _tiers({"t5"})
    memory.prime(["t1", "t3", "t5"])
    memory.node("t1")
    assert source.batches == [["t1", "t3"]]
    memory.neighbours("t1", LAYERS, ("NEXT",))
    memory.neighbours("t3", LAYERS, ("NEXT",))
    memory.neighbours("t5", LAYERS, ("NEXT",))
    assert [sorted(batch) for batch in source.batches] == [["t1", "t3"], ["t0", "t2", "t4"]]
    assert memory.fetches == 2


def test_the_reranks_order_a_ranking_as_over_the_whole_view() -> None:
    whole, memory, _ = _tiers({"t5"})
    lists = {"vector": ranking_of("t2", "t4", "t0"), "bm25": ranking_of("t4", "t1")}
    memory.prime([c.node_id for found in lists.values() for c in found])
    query = f"what did {USER} say about the garden?"
    assert rank_lists(memory, query, lists, LAYERS, BALANCED, 1000) == rank_lists(
        whole, query, lists, LAYERS, BALANCED, 1000
    )
