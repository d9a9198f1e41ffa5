"""The lookups a dream reads of a user's episodes, kept as they are folded (processors/dreaming/episode_index.py)."""

from __future__ import annotations

from engram.processors.dreaming.abstract import entities
from engram.processors.dreaming.cluster import clusters
from engram.processors.dreaming.config import BALANCED
from engram.processors.dreaming.episode_index import NameCounts, concept_members
from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.text import SentenceFrequencies
from engram.processors.trace.emit import EVENT_KIND, REF
from engram.schemas.events import edge_removed, memory_event, node_removed, node_upserted
from engram.schemas.records import EDGE_REMOVED, NODE_REMOVED, NODE_UPSERTED
from tests.dreaming.test_consolidate import DAY, anchored, ref, said

WITH_MEL = [
    "Yesterday I hiked the ridge trail with Mel and the whole club before sunrise.",
    "The club met at the lake again and Mel brought her new camera along.",
    "We painted the old fence with Mel after lunch and then cooked dinner together.",
    "My sister called because Mel wanted the recipe for the lemon cake.",
]


def assert_as_scanned(graph: DreamGraph) -> None:
    """The index holds exactly what a scan of the graph's episodes finds now."""
    episodes = list(graph.episodes.values())
    index = graph.index
    assert index.by_concept == concept_members(episodes)
    assert index.names == NameCounts.of(episodes)
    assert index.by_turn == {e.turn_id: e.node_id for e in episodes}
    sessions: dict[str, set[str]] = {}
    for episode in episodes:
        sessions.setdefault(episode.session_id, set()).add(episode.node_id)
    assert {session: set(ids) for session, ids in index.by_session.items()} == sessions
    scanned = SentenceFrequencies()
    for episode in episodes:
        scanned.add(episode.text)
    assert (+index.frequencies.df, index.frequencies.n) == (scanned.df, scanned.n)


def test_the_index_answers_as_a_scan_of_the_episodes_after_every_kind_of_change() -> None:
    graph = DreamGraph("ada")
    graph.apply(said([WITH_MEL[:2], WITH_MEL[2:], ["I went hiking with my sister and we talked about Mel."]]))
    assert graph.index.by_concept and graph.index.names.uses["Mel"]
    assert_as_scanned(graph)

    first = next(iter(graph.episodes.values()))
    props = {"turn_index": str(first.turn_index), "role": first.role, "turn_id": first.turn_id}
    rewritten = node_upserted(first.node_id, EVENT_KIND, "USER", first.time_ms, text="We rested at home all day.",
                              user_id="ada", session_id="moved", properties=props)  # fmt: skip
    graph.apply([memory_event("ada", first.time_ms, [ref(0)], NODE_UPSERTED, rewritten)])
    assert_as_scanned(graph)
    assert [e.node_id for e in graph.session("moved")] == [first.node_id]

    with_concepts = next(e for e in graph.episodes.values() if e.concepts)
    concept = sorted(with_concepts.concepts)[0]
    unref = edge_removed(REF, with_concepts.node_id, concept, "test")
    graph.apply([memory_event("ada", 0, [ref(1)], EDGE_REMOVED, unref)])
    assert with_concepts.node_id not in graph.index.by_concept.get(concept, {})
    assert_as_scanned(graph)

    gone = sorted(graph.episodes)[-1]
    graph.apply([memory_event("ada", 0, [ref(2)], NODE_REMOVED, node_removed(gone, EVENT_KIND, "erased"))])
    assert_as_scanned(graph)
    assert_as_scanned(DreamGraph.from_dict(graph.to_dict()))


def test_a_dream_before_the_latest_episode_leaves_the_later_ones_out() -> None:
    """Episodes on days 0-3 sharing a concept and naming Mel: a dream on day 2 sees three of them,
    on day 1 two (too few for a cluster or a profile), on day 3 all four, read from the index."""
    graph = DreamGraph("ada")
    graph.apply(anchored(WITH_MEL))

    def seen(at_ms: int) -> tuple[list[list[str]], list[list[str]]]:
        found = clusters(graph, at_ms, BALANCED)
        named = entities(graph, at_ms, BALANCED)
        return [[m.node_id for m in c.members] for c in found], [[e.node_id for e in v] for v in named.values()]

    assert graph.index.covers(3 * DAY) and not graph.index.covers(2 * DAY)
    assert seen(3 * DAY) == ([["e0", "e1", "e2", "e3"]], [["e0", "e1", "e2", "e3"]])
    assert seen(2 * DAY) == ([["e0", "e1", "e2"]], [["e0", "e1", "e2"]])
    assert seen(1 * DAY) == ([], [])
