"""The head record's loose edges (NEXT and CAUSAL edges out of nodes that are not episodes) come from
the graph's kept set of loose sources, and equal a difference of every edge source with the episodes
whatever the order of episodes, edges and removals, before and after a read back."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.records import _loose
from engram.processors.trace import EVENT_KIND
from engram.schemas.events import edge_removed, edge_upserted, memory_event, node_removed, node_upserted
from engram.schemas.records import EDGE_REMOVED, EDGE_UPSERTED, NODE_REMOVED, NODE_UPSERTED, EventRef, MemoryEvent

NODES = [f"n{i}" for i in range(6)]
KINDS = ("NEXT", "CAUSAL")
SOURCE: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 0}


def episode(node_id: str) -> MemoryEvent:
    props = {"turn_index": "0", "role": "user", "turn_id": node_id}
    node = node_upserted(node_id, EVENT_KIND, "USER", 0, text=f"said {node_id}", user_id="ada", session_id="s",
                         properties=props)  # fmt: skip
    return memory_event("ada", 0, [SOURCE], NODE_UPSERTED, node)


def removal(node_id: str) -> MemoryEvent:
    return memory_event("ada", 0, [SOURCE], NODE_REMOVED, node_removed(node_id, EVENT_KIND, "test"))


def edge(kind: str, src: str, dst: str, *, upsert: bool) -> MemoryEvent:
    if upsert:
        return memory_event("ada", 0, [SOURCE], EDGE_UPSERTED, edge_upserted(kind, src, dst, "USER"))
    return memory_event("ada", 0, [SOURCE], EDGE_REMOVED, edge_removed(kind, src, dst, "test"))


node = st.sampled_from(NODES)
events = st.one_of(
    st.builds(episode, node),
    st.builds(removal, node),
    st.builds(edge, st.sampled_from(KINDS), node, node, upsert=st.booleans()),
)


def diffed(graph: DreamGraph) -> dict[str, list[list[str]]]:
    """What the head held before: every edge source diffed with the episodes."""

    def out_of(edges: dict[str, set[str]]) -> list[list[str]]:
        return [[s, d] for s in sorted(edges.keys() - graph.episodes.keys()) for d in sorted(edges[s])]

    return {"next": out_of(graph.next_out), "causal": out_of(graph.causal_out)}


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(events, max_size=8), min_size=1, max_size=6))
def test_loose_edges_equal_every_edge_source_diffed_with_the_episodes(batches: list[list[MemoryEvent]]) -> None:
    graph = DreamGraph("ada")
    for batch in batches:
        graph.apply(batch)
        assert _loose(graph) == diffed(graph)
        again = DreamGraph.from_dict(graph.to_dict())
        assert _loose(again) == diffed(again) == diffed(graph)
