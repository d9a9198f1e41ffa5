"""Pruning ages an episode from its last use (prune.py, seed 001 eq. 3): a compiled context that held
it (NodesAccessed) keeps it active for T_decay more; an unused episode as old goes dormant. The
last use is part of the dream state's JSON form and folding an access twice changes nothing."""

from __future__ import annotations

from dataclasses import replace

from engram.processors.dreaming.config import BALANCED, DAY_MS
from engram.processors.dreaming.graph import CONSOLIDATES, DreamGraph
from engram.processors.dreaming.prune import TOO_RECENT, _eligible, _scanned, phi, prune
from engram.processors.dreaming.rows import episode_of, episode_row
from engram.processors.trace.emit import CONCEPT_KIND, EVENT_KIND, NEXT, REF
from engram.schemas.events import edge_upserted, memory_event, node_upserted, nodes_accessed
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, NODES_ACCESSED, EventRef, MemoryEvent

CONFIG = replace(BALANCED, decay_ms=2 * DAY_MS)
TURN: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 1}
REQUEST: EventRef = {"topic": "engram.context.requests", "partition": 0, "offset": 1}


def memory() -> list[MemoryEvent]:
    """Three turns of one session on day 0, their concept committed by a gist: all prunable once old."""
    events = [memory_event("u", 0, [TURN], NODE_UPSERTED, node_upserted("c", CONCEPT_KIND, "USER", 0, text="c"))]
    for i, node in enumerate(["a", "b", "z"]):
        props = {"turn_index": str(i), "role": "user", "turn_id": node}
        turn = node_upserted(node, EVENT_KIND, "USER", i, text=node, user_id="u", session_id="s", properties=props)
        events.append(memory_event("u", i, [TURN], NODE_UPSERTED, turn))
        events.append(memory_event("u", i, [TURN], EDGE_UPSERTED, edge_upserted(REF, node, "c", "USER")))
    events += [memory_event("u", 3, [TURN], EDGE_UPSERTED, edge_upserted(NEXT, s, d, "USER")) for s, d in ("ab", "bz")]
    gist = node_upserted("g", "gist", "USER", 3, text="gist", user_id="u")
    events.append(memory_event("u", 3, [TURN], NODE_UPSERTED, gist))
    events.append(memory_event("u", 3, [TURN], EDGE_UPSERTED, edge_upserted(CONSOLIDATES, "g", "c", "USER")))
    return events


def used(node_id: str, at_ms: int) -> MemoryEvent:
    return memory_event("u", at_ms, [REQUEST], NODES_ACCESSED, nodes_accessed([node_id], f"q{at_ms}"))


def test_an_episode_in_use_outlasts_an_equally_old_unused_one() -> None:
    graph = DreamGraph("u")
    graph.apply([*memory(), used("b", 5 * DAY_MS)])
    at_ms = 6 * DAY_MS  # six days after the turns, one after b's last use
    assert phi(graph, graph.episodes["b"], at_ms, CONFIG).failing == (TOO_RECENT,)
    assert phi(graph, graph.episodes["a"], at_ms, CONFIG).eligible
    assert sorted(prune(graph, at_ms, CONFIG, key="u").dormant) == ["a", "z"]
    assert prune(graph, 7 * DAY_MS + 1, CONFIG, key="u").dormant == ["b"]  # T_decay after its last use


def test_the_kept_standing_follows_uses_as_judging_every_episode_does() -> None:
    graph = DreamGraph("u")
    graph.apply(memory())
    _eligible(graph, 3 * DAY_MS, CONFIG)  # settled once: what follows is kept up to date
    graph.apply([used("a", 2 * DAY_MS), used("z", DAY_MS // 2)])
    for at_ms in (3 * DAY_MS, 4 * DAY_MS + 1):
        kept, held = _eligible(graph, at_ms, CONFIG)
        judged, judged_held = _scanned(graph, at_ms, CONFIG)
        assert sorted(e.node_id for e in kept) == sorted(e.node_id for e in judged) and held == judged_held
    assert [e.node_id for e in _eligible(graph, 3 * DAY_MS, CONFIG)[0]] == ["b", "z"]


def test_the_last_use_is_the_latest_and_folding_it_again_changes_nothing() -> None:
    graph = DreamGraph("u")
    graph.apply([*memory(), used("a", 9), used("a", 4), used("missing", 7)])
    state = graph.to_dict()
    graph.apply([used("a", 9), used("a", 4)])
    assert graph.episodes["a"].last_access_ms == 9 and graph.to_dict() == state
    assert DreamGraph.from_dict(state).to_dict() == state


def test_an_episode_row_keeps_its_last_use_and_rows_without_one_read_as_never_used() -> None:
    graph = DreamGraph("u")
    graph.apply([*memory(), used("a", 9)])
    a, b = graph.episodes["a"], graph.episodes["b"]
    assert episode_of(episode_row(a), 0) == a and len(episode_row(a)) == 14
    assert len(episode_row(b)) == 13 and episode_of(episode_row(b), 0).last_access_ms == -1
