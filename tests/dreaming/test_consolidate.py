"""Clustering, abstraction, active dreaming and integration (processors/dreaming/consolidate.py)."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from engram.benchmarks.dream import in_arrival_order
from engram.benchmarks.locomo_reader import conversation_turns
from engram.processors.dreaming import dream as dream_module
from engram.processors.dreaming.abstract import entities, gist, gist_basis
from engram.processors.dreaming.cluster import Cluster, Idf, clusters, consolidated_id, sentences
from engram.processors.dreaming.config import BALANCED
from engram.processors.dreaming.consolidate import consolidate
from engram.processors.dreaming.dream import Dreamer, DreamInvariantError
from engram.processors.dreaming.graph import CENTRAL, CITES, CONSOLIDATES, GIST_KIND, RULE_KIND, DreamGraph
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.schedule import DueDream
from engram.processors.dreaming.text import SentenceFrequencies
from engram.processors.dreaming.verify import verify
from engram.processors.trace.emit import CONCEPT_KIND, EVENT_KIND, REF
from engram.schemas.changes import change_as
from engram.schemas.events import edge_upserted, memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import (
    EDGE_UPSERTED,
    NODE_UPSERTED,
    ConversationTurn,
    EdgeUpserted,
    EventRef,
    MemoryEvent,
    NodeUpserted,
    RuleCommitted,
    RuleRejected,
)
from engram.streams.steps import derive_turns

DAY = 86_400_000
LOCOMO = Path(__file__).resolve().parents[3] / "shared" / "benchdata" / "locomo"


def count(text: str) -> int:
    return len(text.split())


def said(sessions: list[list[str]], user: str = "ada") -> list[MemoryEvent]:
    """The sessions' user turns through the Trace and the facts step, each turn's facts right after it."""
    turns: list[ConversationTurn] = []
    for s, texts in enumerate(sessions):
        for i, text in enumerate(texts):
            turns.append({
                "turn_id": f"{user}-{s}-{i}", "user_id": user, "agent_id": None, "flow_id": None,
                "session_id": f"{user}-s{s}", "turn_index": i, "role": "user", "content": text,
                "event_time_ms": s * 2 * DAY + i * 60_000, "layer": "USER", "causal_parent_ids": [],
                "tool_calls": [], "metadata": {},
            })  # fmt: skip
    records = [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(turns)]
    derived, _ = derive_turns(records, "engram.memory")
    return sorted(derived, key=lambda e: e["sources"][0]["offset"] if e["sources"] else 0)


def ref(offset: int) -> EventRef:
    return {"topic": "engram.turns", "partition": 0, "offset": offset}


def anchored(texts: list[str], concept: str = "c1") -> list[MemoryEvent]:
    """Episodes in separate sessions, all REF-ing one concept."""
    node = node_upserted(concept, CONCEPT_KIND, "USER", 0, text="hiking", user_id="ada")
    events = [memory_event("ada", 0, [ref(0)], NODE_UPSERTED, node)]
    for i, text in enumerate(texts):
        props = {"turn_index": "0", "role": "user", "turn_id": f"t{i}"}
        episode = node_upserted(f"e{i}", EVENT_KIND, "USER", i * DAY, text=text, user_id="ada",
                                session_id=f"s{i}", properties=props)  # fmt: skip
        events.append(memory_event("ada", i * DAY, [ref(i)], NODE_UPSERTED, episode))
        events.append(
            memory_event("ada", i * DAY, [ref(i)], EDGE_UPSERTED, edge_upserted(REF, f"e{i}", concept, "USER"))
        )
    return events


HIKES = [
    "We hiked the ridge trail above the lake at sunrise with the whole hiking club.",
    "The hiking club met at the ridge trail again and we saw the lake from the top.",
    "Our ridge trail hike with the club ended at the lake where we had lunch.",
    "I bought new boots before the club hike on the ridge trail to the lake.",
]


def test_a_cluster_of_shared_anchors_becomes_a_gist_that_commits_its_concept_and_cites_every_episode() -> None:
    graph = DreamGraph("ada")
    graph.apply(anchored(HIKES))
    [cluster] = clusters(graph, 10 * DAY, BALANCED)
    assert [m.node_id for m in cluster.members] == ["e0", "e1", "e2", "e3"]
    out = consolidate(graph, 10 * DAY, BALANCED, count=count)
    assert out.counts() == {"gist": 1} and out.rejected == []
    gist = next(n for e in out.events if (n := change_as(e, NodeUpserted)) is not None)
    assert gist["node_id"] == consolidated_id("ada", GIST_KIND, "c1") and gist["layer"] == "USER"
    assert "ridge trail" in gist["text"] and gist["tokens"] == count(gist["text"])
    edges = [(c["edge_type"], c["dst"]) for e in out.events if (c := change_as(e, EdgeUpserted)) is not None]
    assert (CONSOLIDATES, "c1") in edges and {d for t, d in edges if t == CITES} == {"e0", "e1", "e2", "e3"}
    assert graph.concepts["c1"].committed
    provenance = {s["offset"] for e in out.events for s in e["sources"]}
    assert provenance == {0, 1, 2, 3}


def test_an_unchanged_memory_dreams_nothing_new_and_a_new_member_dreams_again() -> None:
    graph = DreamGraph("ada")
    graph.apply(anchored(HIKES[:3]))
    first = consolidate(graph, 10 * DAY, BALANCED, count=count)
    assert first.kept and consolidate(graph, 11 * DAY, BALANCED, count=count).events == []
    graph.apply(anchored(HIKES)[-2:])  # the fourth hike
    again = consolidate(graph, 12 * DAY, BALANCED, count=count)
    cites = [c["dst"] for e in again.events if (c := change_as(e, EdgeUpserted)) and c["edge_type"] == CITES]
    assert cites == ["e3"]  # only the new citation; the others are there already


def test_a_gist_resting_on_one_episode_fails_leave_one_out_and_says_why() -> None:
    texts = [
        "We hiked the ridge trail above the lake at sunrise with the whole hiking club.",
        "Lunch was fine.",
        "It rained.",
    ]
    graph = DreamGraph("ada")
    graph.apply(anchored(texts))
    out = consolidate(graph, 10 * DAY, BALANCED, count=count)
    [rejection] = out.rejected
    assert rejection.code == "leave-one-out" and "t0" in rejection.reason
    [event] = out.events
    rejected = change_as(event, RuleRejected)
    assert rejected is not None and rejected["stage"] == "active-dreaming:leave-one-out"
    assert not graph.concepts["c1"].committed
    assert consolidate(graph, 11 * DAY, BALANCED, count=count).events == []  # rejected once, not every dream


def test_a_fact_stated_in_four_sessions_becomes_a_rule_and_in_three_it_fails_leave_one_out() -> None:
    four = said([["I love hiking."], ["I love hiking."], ["I love hiking."], ["I love hiking."]])
    graph = DreamGraph("ada")
    graph.apply(four)
    out = consolidate(graph, 20 * DAY, BALANCED, count=count)
    rules = [r for e in out.events if (r := change_as(e, RuleCommitted)) is not None]
    assert [r["text"] for r in rules] == ["user likes hiking regularly (4 sessions)"]
    assert len(rules[0]["evidence_node_ids"]) == 4
    assert consolidated_id("ada", RULE_KIND, next(iter(graph.facts))) == rules[0]["rule_id"]

    three = DreamGraph("ada")
    three.apply(said([["I love hiking."], ["I love hiking."], ["I love hiking."]]))
    rejected = consolidate(three, 20 * DAY, BALANCED, count=count).rejected
    assert [(r.candidate.kind, r.code) for r in rejected] == [("rule", "leave-one-out")]
    assert "needs 3 sessions" in rejected[0].reason


def test_a_gist_whose_episode_belief_revision_retracted_is_rejected_as_contradicted() -> None:
    graph = DreamGraph("ada")
    graph.apply(said([["I work at Meta in the big office."], ["I work at Google in the new office now."]]))
    assert graph.retracted_turns == {"ada-0-0"}
    episodes = tuple(sorted(graph.episodes.values(), key=lambda e: e.time_ms))
    idf = Idf.of(sentences(episodes))
    candidate = gist(graph, Cluster("c9", "work", episodes), BALANCED, idf)
    assert candidate is not None
    rejection = verify(graph, candidate, BALANCED, idf)
    assert rejection is not None and rejection.code == "contradicted" and "ada-0-0" in rejection.reason


def test_on_a_locomo_conversation_the_speakers_get_profiles_and_most_clusters_commit() -> None:
    data = json.loads((LOCOMO / "26.json").read_text())
    turns = conversation_turns(data, "26", caption_in_content=True)
    derived, _ = derive_turns([Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(turns)], "engram.memory")
    graph = DreamGraph("26")
    graph.apply(in_arrival_order(derived))
    end = max(e.time_ms for e in graph.episodes.values())
    names = set(entities(graph, end, BALANCED))
    assert {"Caroline", "Melanie"} <= names and not names & {"Wow", "Hey", "Friday"}
    out = consolidate(graph, end, BALANCED, count=count)
    kinds = Counter(c.kind for c in out.kept)
    assert kinds["gist"] >= 0.8 * len(out.clusters) and kinds["profile"] >= 2
    assert all(c.sessions >= BALANCED.min_rule_sessions for c in out.kept if c.kind == "rule")
    assert len(graph.committed()) == kinds["gist"]


def test_a_concepts_next_gist_ranks_its_new_episodes_with_the_central_sentences_of_its_last() -> None:
    """Recursive gists: the second dream of a concept reads the episode it does not cite yet and the
    sentences its gist names (CENTRAL), not the concept's whole history; the names survive JSON."""
    graph = DreamGraph("ada")
    graph.apply(anchored(HIKES[:3]))
    first = consolidate(graph, 10 * DAY, BALANCED, count=count)
    node = next(n for e in first.events if (n := change_as(e, NodeUpserted)) is not None)
    refs = node["properties"][CENTRAL].split()
    assert refs and all(r.split("#")[0] in {"e0", "e1", "e2"} for r in refs)
    graph = DreamGraph.from_dict(json.loads(json.dumps(graph.to_dict())))
    graph.apply(anchored(HIKES)[-2:])  # the fourth hike
    [cluster] = clusters(graph, 12 * DAY, BALANCED)
    basis = gist_basis(graph, cluster.members, graph.consolidated[node["node_id"]])
    assert [s.ref for s in basis.sentences] == [*refs, "e3#0"]
    assert basis.mass == (3 / len(refs),) * len(refs) + (1.0,)
    again = consolidate(graph, 12 * DAY, BALANCED, count=count)
    assert again.counts() == {"gist": 1} and "Gist (4 episodes" in again.kept[0].text


def test_the_sentence_frequencies_follow_episodes_added_rewritten_and_removed() -> None:
    graph = DreamGraph("ada")
    graph.apply(anchored(HIKES))
    rewritten = anchored(["We walked the coastal path to the old lighthouse and back before dinner."])[1]
    graph.apply([rewritten])  # e0 says something else now
    whole = Idf.of(sentences(graph.episodes.values()))
    assert (dict(graph.frequencies.df), graph.frequencies.n) == (whole.df, whole.n)
    fresh = SentenceFrequencies()
    for episode in graph.episodes.values():
        fresh.add(episode.text)
    assert DreamGraph.from_dict(graph.to_dict()).frequencies == fresh


def test_a_dream_that_breaks_an_invariant_leaves_the_memory_as_it_was(monkeypatch: pytest.MonkeyPatch) -> None:
    memory = UserMemory.new("ada")
    for event in anchored(HIKES):
        memory.fold(event)
    before = memory.to_dict()
    monkeypatch.setattr(dream_module, "check_invariants", lambda graph, dormant: ["I1: forced for the test"])
    with pytest.raises(DreamInvariantError, match="forced for the test"):
        Dreamer(BALANCED, count).dream(memory, DueDream(20 * DAY, "ada", "window"))
    assert memory.to_dict() == before
    assert memory.graph.next_out == DreamGraph.from_dict(before["graph"]).next_out
    monkeypatch.undo()
    assert Dreamer(BALANCED, count).dream(memory, DueDream(20 * DAY, "ada", "window"))
    assert memory.graph.concepts["c1"].committed
