"""NEXT is a gap-free total order per session, even with late and repeated arrivals (LoCoMo)."""

from __future__ import annotations

import random
from collections import defaultdict

from engram.processors.trace.builder import TraceBuilder, event_node_id
from engram.processors.trace.config import TraceConfig
from engram.processors.trace.navigate import TraceIndex
from engram.schemas.records import ConversationTurn, EventRef, MemoryEvent
from tests.trace.conftest import refs
from tests.trace.turns import ref, removed_edges, turn, upserted_edges, upserted_nodes


def session_chains(index: TraceIndex, turns: list[ConversationTurn]) -> dict[str, list[str]]:
    """Each session's nodes walked from its head along NEXT."""
    members: dict[str, set[str]] = defaultdict(set)
    for t in turns:
        members[t["session_id"]].add(event_node_id(t["user_id"], t["turn_id"]))
    chains = {}
    for session, nodes in members.items():
        heads = [n for n in nodes if n not in index.prev]
        assert len(heads) == 1, f"{session}: {len(heads)} chain heads"
        chain = [heads[0]]
        while chain[-1] in index.next:
            chain.append(index.next[chain[-1]])
        chains[session] = chain
    return chains


def expected_chains(turns: list[ConversationTurn]) -> dict[str, list[str]]:
    by_session: dict[str, list[ConversationTurn]] = defaultdict(list)
    for t in turns:
        by_session[t["session_id"]].append(t)
    return {
        s: [event_node_id(t["user_id"], t["turn_id"]) for t in sorted(ts, key=lambda t: t["turn_index"])]
        for s, ts in by_session.items()
    }


def run(builder: TraceBuilder, items: list[tuple[ConversationTurn, EventRef]], rng: random.Random) -> list[MemoryEvent]:
    events: list[MemoryEvent] = []
    start = 0
    while start < len(items):
        size = rng.randint(1, 300)
        events.extend(builder.apply_batch(items[start : start + size]))
        start += size
    return events


def test_in_order_arrival_gives_each_session_a_total_order(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    builder = TraceBuilder()
    for turns in locomo_turns.values():
        index = TraceIndex.from_events(builder.apply_batch(refs(turns)))
        assert session_chains(index, turns) == expected_chains(turns)


def test_shuffled_and_duplicated_arrival_gives_the_same_order(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    rng = random.Random(7)
    builder = TraceBuilder()
    for turns in locomo_turns.values():
        arrivals = list(turns) + rng.sample(turns, len(turns) // 5)  # a fifth arrive twice
        rng.shuffle(arrivals)
        events = run(builder, refs(arrivals), rng)
        index = TraceIndex.from_events(events)
        assert session_chains(index, turns) == expected_chains(turns)
        upserted = [n for n in upserted_nodes(events) if n["kind"] == "event"]
        assert len(upserted) == len(turns)  # duplicates yield nothing
        assert any(e["change"][0] == "engram.EdgeRemoved" for e in events)  # late arrivals repaired NEXT


def test_backtrack_returns_exactly_the_k_previous_turns(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    rng = random.Random(11)
    builder = TraceBuilder()
    for turns in locomo_turns.values():
        index = TraceIndex.from_events(builder.apply_batch(refs(turns)))
        for chain in expected_chains(turns).values():
            for _ in range(10):
                pos = rng.randrange(len(chain))
                k = rng.randint(1, 40)
                expected = list(reversed(chain[max(0, pos - k) : pos]))
                assert index.backtrack(chain[pos], k) == expected


def test_a_repeated_turn_yields_no_events(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    turns = next(iter(locomo_turns.values()))[:20]
    builder = TraceBuilder()
    assert builder.apply_batch(refs(turns))
    assert builder.apply_batch(refs(turns, start=100)) == []
    same_content_new_id = turns[3].copy()
    same_content_new_id["turn_id"] = "resent-under-another-id"
    assert builder.apply_batch(refs([same_content_new_id], start=200)) == []


def test_a_turn_older_than_the_kept_window_gets_no_next_edge() -> None:
    builder = TraceBuilder(TraceConfig(max_session_turns=3))
    for i in range(2, 8):
        builder.apply(turn(i, f"message number {i}"), ref(i))
    assert len(builder.state("u1").session("s1")) == 3
    events = builder.apply(turn(1, "a very late message"), ref(50))
    assert [n["kind"] for n in upserted_nodes(events)][0] == "event"
    assert not [e for e in upserted_edges(events) if e["edge_type"] == "NEXT"] and not removed_edges(events)
