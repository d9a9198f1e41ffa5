"""Forgetting keeps the graph's invariants (seed 000 §5.3.1), on random DAGs and on LoCoMo.

After any sequence of prunes and re-awakenings:
- NEXT is a total order over the active episodes of each session (eq. 16's contraction);
- every active node keeps its full causal ancestry (no causal ancestor of an active node is dormant);
- every episode φ allows at a prune's time is dormant after it (eq. 15);
- re-awakening restores exactly the edges that were there: all of them awake again, the NEXT edges
  are the original ones, and a re-awakened node's own edges never went away.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.benchmarks.locomo import conversation_events
from engram.processors.dreaming.config import BALANCED, DAY_MS
from engram.processors.dreaming.graph import CONSOLIDATES, DreamGraph
from engram.processors.dreaming.prune import _eligible, _scanned, check_invariants, phi, prune, reawaken
from engram.processors.trace.builder import TraceBuilder
from engram.processors.trace.emit import CAUSAL, CONCEPT_KIND, EVENT_KIND, NEXT, REF
from engram.schemas.events import (
    edge_removed,
    edge_upserted,
    memory_event,
    node_dormant,
    node_removed,
    node_upserted,
    nodes_accessed,
)
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    NODE_DORMANT,
    NODE_REMOVED,
    NODE_UPSERTED,
    NODES_ACCESSED,
    ChangeRecord,
    EventRef,
    MemoryEvent,
)

CONFIG = replace(BALANCED, decay_ms=DAY_MS)
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "benchdata" / "locomo"


def _event(kind: str, change: ChangeRecord, offset: int) -> MemoryEvent:
    ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": offset}
    return memory_event("u", offset, [ref], kind, change)


@st.composite
def random_memory(draw: st.DrawFn) -> tuple[list[MemoryEvent], list[int]]:
    """Sessions of episodes chained by NEXT, random REF anchors (some concepts committed through a
    gist's CONSOLIDATES edge), random CAUSAL edges from earlier to later episodes, random times."""
    sizes = draw(st.lists(st.integers(1, 7), min_size=1, max_size=4))
    concepts = [f"c{i}" for i in range(draw(st.integers(1, 4)))]
    events: list[MemoryEvent] = [
        _event(NODE_UPSERTED, node_upserted(c, CONCEPT_KIND, "USER", 0, text=c, user_id="u"), 0) for c in concepts
    ]
    ids: list[str] = []
    offset = 0
    for s, size in enumerate(sizes):
        previous = None
        for i in range(size):
            node = f"s{s}e{i}"
            time_ms = draw(st.integers(0, 20)) * DAY_MS // 2
            props = {"turn_index": str(i), "role": "user", "turn_id": node}
            change = node_upserted(node, EVENT_KIND, "USER", time_ms, text=node, user_id="u", session_id=f"s{s}",
                                   properties=props)  # fmt: skip
            events.append(_event(NODE_UPSERTED, change, offset))
            if previous is not None:
                events.append(_event(EDGE_UPSERTED, edge_upserted(NEXT, previous, node, "USER"), offset))
            for concept in draw(st.sets(st.sampled_from(concepts), max_size=2)):
                events.append(_event(EDGE_UPSERTED, edge_upserted(REF, node, concept, "USER"), offset))
            previous = node
            ids.append(node)
            offset += 1
    for a, b in draw(st.lists(st.tuples(st.integers(0, len(ids) - 1), st.integers(0, len(ids) - 1)), max_size=6)):
        if a < b:
            events.append(_event(EDGE_UPSERTED, edge_upserted(CAUSAL, ids[a], ids[b], "USER"), offset))
    gist = node_upserted("g", "gist", "USER", 0, text="gist", user_id="u")
    events.append(_event(NODE_UPSERTED, gist, offset))
    for concept in draw(st.sets(st.sampled_from(concepts))):
        events.append(_event(EDGE_UPSERTED, edge_upserted(CONSOLIDATES, "g", concept, "USER"), offset))
    steps = draw(st.lists(st.integers(-len(ids), 12), min_size=1, max_size=8))
    return events, steps


def assert_invariants(graph: DreamGraph) -> None:
    assert check_invariants(graph) == []
    for session in {e.session_id for e in graph.episodes.values()}:
        active = [e.node_id for e in graph.session(session) if e.chained and not e.dormant]
        live = {(s, d) for s, d in graph.next_edges if s in active and d in active}
        assert live == set(zip(active, active[1:], strict=False))  # one path, in order, over them all
    for node in graph.active():
        stack = list(graph.causal_in.get(node.node_id, ()))
        seen: set[str] = set()
        while stack:
            cause = stack.pop()
            if cause in seen:
                continue
            seen.add(cause)
            assert not graph.episodes[cause].dormant, f"{cause} is a dormant causal ancestor of {node.node_id}"
            stack.extend(graph.causal_in.get(cause, ()))


def run_steps(graph: DreamGraph, steps: list[int]) -> None:
    ids = sorted(graph.episodes)
    for step in steps:
        if step >= 0:
            at_ms = step * DAY_MS
            assert check_invariants(graph, prune(graph, at_ms, CONFIG, key="u").dormant) == []
            for episode in graph.episodes.values():
                if episode.time_ms <= at_ms and phi(graph, episode, at_ms, CONFIG).eligible:
                    assert episode.dormant, "an episode eq. 15 allows stayed active"
        else:
            reawaken(graph, ids[-step - 1], 10**12, "test", key="u")
        assert_invariants(graph)


@settings(max_examples=150, deadline=None)
@given(random_memory())
def test_any_sequence_of_prunes_and_reawakenings_keeps_both_invariants(
    memory: tuple[list[MemoryEvent], list[int]],
) -> None:
    events, steps = memory
    graph = DreamGraph("u")
    graph.apply(events)
    original_next = set(graph.next_edges)
    original_causal = {k: set(v) for k, v in graph.causal_out.items()}
    original_refs = {e.node_id: set(e.concepts) for e in graph.episodes.values()}
    run_steps(graph, steps)
    for node_id in sorted(graph.episodes):
        reawaken(graph, node_id, 10**12, "all back", key="u")
    assert graph.next_edges == original_next
    assert {k: v for k, v in graph.causal_out.items() if v} == {k: v for k, v in original_causal.items() if v}
    assert {e.node_id: e.concepts for e in graph.episodes.values()} == original_refs


@settings(max_examples=60, deadline=None)
@given(random_memory())
def test_the_events_are_the_truth_and_folding_them_twice_changes_nothing(
    memory: tuple[list[MemoryEvent], list[int]],
) -> None:
    events, steps = memory
    graph = DreamGraph("u")
    graph.apply(events)
    emitted: list[MemoryEvent] = []
    for step in (s for s in steps if s >= 0):
        emitted.extend(prune(graph, step * DAY_MS, CONFIG, key="u").events)
    refolded = DreamGraph("u")
    refolded.apply(events + emitted)
    assert refolded.to_dict() == graph.to_dict()
    refolded.apply(emitted)
    assert refolded.to_dict() == graph.to_dict()


@pytest.mark.parametrize("name", ["26", "43"])
def test_locomo_pruning_keeps_the_invariants_and_reawakening_restores_every_edge(name: str) -> None:
    data = json.loads((LOCOMO / f"{name}.json").read_text())
    graph = DreamGraph(name)
    graph.apply(conversation_events(name, data, TraceBuilder()))
    for concept in graph.concepts.values():
        concept.committed = True
    original = set(graph.next_edges)
    end = max(e.time_ms for e in graph.episodes.values())
    dormant: list[str] = []
    for at_ms in (end - 60 * DAY_MS, end - 20 * DAY_MS, end):
        dormant += prune(graph, at_ms, CONFIG, key=name).dormant
        assert_invariants(graph)
    assert len(dormant) > len(graph.episodes) // 4
    assert all(not graph.causal_out.get(n) for n in dormant)  # eq. 15: no outgoing causal edge
    for node_id in dormant[::2]:
        reawaken(graph, node_id, end, "query", key=name)
        assert_invariants(graph)
    for node_id in dormant[1::2]:
        reawaken(graph, node_id, end, "query", key=name)
    assert graph.next_edges == original


def test_the_check_finds_what_breaks_each_invariant_over_the_whole_graph_and_over_a_dreams_changes() -> None:
    """A dormancy no prune made (its timeline not contracted, its causal child still active) breaks
    both invariants: the whole-graph check and the check of that change find both."""
    events = [
        _event(
            NODE_UPSERTED,
            node_upserted(
                n,
                EVENT_KIND,
                "USER",
                i * DAY_MS,
                text=n,
                user_id="u",
                session_id="s",
                properties={"turn_index": str(i), "turn_id": n},
            ),
            i,
        )  # fmt: skip
        for i, n in enumerate(["a", "b", "c"])
    ]
    events += [_event(EDGE_UPSERTED, edge_upserted(NEXT, s, d, "USER"), 3) for s, d in (("a", "b"), ("b", "c"))]
    events.append(_event(EDGE_UPSERTED, edge_upserted(CAUSAL, "b", "c", "USER"), 3))
    graph = DreamGraph("u")
    graph.apply(events)
    assert check_invariants(graph) == [] and check_invariants(graph, ["b"]) == []
    graph.apply([_event(NODE_DORMANT, node_dormant("b", "by hand"), 4)])
    for found in (check_invariants(graph), check_invariants(graph, ["b"])):
        assert [v[:3] for v in found] == ["I1:", "I2:"] and "causal parent of active c" in found[1]
    assert check_invariants(graph, []) == []  # a dream that made nothing dormant changed no timeline


@settings(max_examples=120, deadline=None)
@given(random_memory(), st.lists(st.tuples(st.sampled_from(["unref", "uncause", "commit", "forget", "wake", "refresh",
                                                            "found", "use"]),
                                           st.integers(0, 40)), max_size=8))  # fmt: skip
def test_where_each_episode_stands_is_what_judging_every_one_finds(
    memory: tuple[list[MemoryEvent], list[int]], edits: list[tuple[str, int]]
) -> None:
    """After prunes, re-awakenings and edits to what eq. 15 reads (a REF or CAUSAL edge removed, a
    concept committed or removed, a concept refreshed as a turn joins it, a concept founded that
    episodes already REF or that a gist already consolidates, an episode used by a compiled
    context), and after a read back, the kept
    standing gives the episodes and the held counts that judging every active episode gives."""
    events, steps = memory
    graph = DreamGraph("u")
    graph.apply(events)
    end = max(e.time_ms for e in graph.episodes.values())
    ids = sorted(graph.episodes)

    def assert_kept_equals_judged(g: DreamGraph, at_ms: int) -> None:
        kept, held = _eligible(g, at_ms, CONFIG)
        judged, judged_held = _scanned(g, at_ms, CONFIG)
        assert sorted(e.node_id for e in kept) == sorted(e.node_id for e in judged) and held == judged_held

    for n, (what, pick) in enumerate(edits):
        node = graph.episodes[ids[pick % len(ids)]]
        concept = sorted(graph.concepts or {"c0"})[pick % max(1, len(graph.concepts))]
        if what == "unref" and node.concepts:
            change: ChangeRecord = edge_removed(REF, node.node_id, sorted(node.concepts)[0], "test")
            graph.apply([_event(EDGE_REMOVED, change, 1000 + n)])
        elif what == "uncause" and graph.causal_out.get(node.node_id):
            change = edge_removed(CAUSAL, node.node_id, sorted(graph.causal_out[node.node_id])[0], "test")
            graph.apply([_event(EDGE_REMOVED, change, 1000 + n)])
        elif what == "commit":
            graph.apply([_event(EDGE_UPSERTED, edge_upserted(CONSOLIDATES, "g", concept, "USER"), 1000 + n)])
        elif what == "use":  # a compiled context held it, up to a day after the last turn
            change = nodes_accessed([node.node_id], f"q{n}")
            graph.apply([memory_event("u", end + pick * DAY_MS // 40, [], NODES_ACCESSED, change)])
        elif what == "forget":
            graph.apply([_event(NODE_REMOVED, node_removed(concept, CONCEPT_KIND, "test"), 1000 + n)])
        elif what in ("refresh", "found"):  # "found": an id REFed and consolidated before its node comes
            target = concept if what == "refresh" else f"late{n}"
            if what == "found":
                edges = [
                    edge_upserted(REF, node.node_id, target, "USER"),
                    edge_upserted(CONSOLIDATES, "g", target, "USER"),
                ]
                graph.apply([_event(EDGE_UPSERTED, edge, 1000 + n) for edge in edges])
                assert_kept_equals_judged(graph, end + (n % 3) * DAY_MS)
            props = {"refresh": "true"} if what == "refresh" else {}
            change = node_upserted(target, CONCEPT_KIND, "USER", 0, text="", user_id="u", properties=props)
            graph.apply([_event(NODE_UPSERTED, change, 1000 + n)])
        else:
            reawaken(graph, node.node_id, end, "test", key="u")
        assert_kept_equals_judged(graph, end + (n % 3) * DAY_MS)
        prune(graph, end + (n % 3) * DAY_MS, CONFIG, key="u")
        assert_kept_equals_judged(graph, end + 2 * DAY_MS)
    for step in (s for s in steps if s >= 0):
        prune(graph, end + step * DAY_MS, CONFIG, key="u")
        assert_kept_equals_judged(graph, end + step * DAY_MS)
    assert_kept_equals_judged(DreamGraph.from_dict(graph.to_dict()), end + 3 * DAY_MS)
