"""An episode keeps its stored row between writes (rows.Episode.row): whatever the graph folds
(upserts, concept references added and removed, NEXT edges, dormancy and re-awakening, uses),
every episode's kept row equals the row built afresh, and the chunks written equal the chunks a
graph read back from them writes."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.records import _chunk
from engram.processors.dreaming.rows import episode_row
from engram.processors.trace import EVENT_KIND
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    memory_event,
    node_dormant,
    node_reawakened,
    node_upserted,
)
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_UPSERTED,
    EventRef,
    MemoryEvent,
)

NODES = [f"n{i}" for i in range(5)]
CONCEPTS = [f"c{i}" for i in range(3)]
SOURCE: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 0}


def episode(node_id: str, said: int) -> MemoryEvent:
    props = {"turn_index": str(said), "role": "user", "turn_id": node_id}
    node = node_upserted(node_id, EVENT_KIND, "USER", 0, text=f"said {node_id} {said}", user_id="ada",
                         session_id="s", properties=props)  # fmt: skip
    return memory_event("ada", 0, [SOURCE], NODE_UPSERTED, node)


def edge(kind: str, src: str, dst: str, *, upsert: bool) -> MemoryEvent:
    if upsert:
        return memory_event("ada", 0, [SOURCE], EDGE_UPSERTED, edge_upserted(kind, src, dst, "USER"))
    return memory_event("ada", 0, [SOURCE], EDGE_REMOVED, edge_removed(kind, src, dst, "test"))


def flag(node_id: str, *, dormant: bool) -> MemoryEvent:
    if dormant:
        return memory_event("ada", 0, [SOURCE], NODE_DORMANT, node_dormant(node_id, "test"))
    return memory_event("ada", 0, [SOURCE], NODE_REAWAKENED, node_reawakened(node_id, "test"))


node = st.sampled_from(NODES)
events = st.one_of(
    st.builds(episode, node, st.integers(0, 3)),
    st.builds(edge, st.just("REF"), node, st.sampled_from(CONCEPTS), upsert=st.booleans()),
    st.builds(edge, st.just("NEXT"), node, node, upsert=st.booleans()),
    st.builds(flag, node, dormant=st.booleans()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(events, max_size=8), min_size=1, max_size=6))
def test_kept_rows_equal_fresh_rows(batches: list[list[MemoryEvent]]) -> None:
    graph = DreamGraph("ada")
    for batch in batches:
        graph.apply(batch)
        graph.use(NODES[:2], 10**12 * len(batch))
        chunks = {chunk: _chunk(graph, chunk) for chunk in graph.members}  # keeps every episode's row
        for e in graph.episodes.values():
            kept = episode_row(e, use=False)
            e.row = None
            assert kept == episode_row(e, use=False)
            assert episode_row(e) == [*kept, e.last_access_ms] if e.last_access_ms >= 0 else kept
        again = DreamGraph.from_dict(graph.to_dict())
        assert {chunk: _chunk(again, chunk) for chunk in again.members} == chunks
