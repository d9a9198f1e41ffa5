"""A failed dream leaves the memory as it was (processors/dreaming/checkpoint.py), whatever it changed."""

from __future__ import annotations

import copy

import pytest

from engram.processors.dreaming import dream as dream_module
from engram.processors.dreaming.config import EAGER
from engram.processors.dreaming.dream import Dreamer, DreamInvariantError
from engram.processors.dreaming.graph import CITES, DreamGraph
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.prune import _eligible, _scanned
from engram.processors.dreaming.records import memory_records, read_memory
from engram.processors.dreaming.schedule import DueDream
from engram.schemas.changes import change_as
from engram.schemas.records import EdgeUpserted, MemoryEvent, NodeDormant
from tests.dreaming.test_consolidate import DAY, HIKES, count, said

# Each session: a hike between two things said once (their concepts are never committed, so they stay
# active and the hike, once dormant, is contracted around).
HIKING = [
    ["I once saw a zeppelin over the harbor.", HIKES[0], "My cousin plays the accordion at weddings."],
    ["Grandma makes marmalade every winter.", HIKES[1], "The observatory lent us a telescope."],
    ["A violinist busked outside the bakery.", HIKES[2], "The aquarium has a new octopus."],
    ["Our neighbor restores a vintage motorcycle.", HIKES[3], "My nephew collects rare stamps."],
]


def edges_out(graph: DreamGraph) -> dict[str, set[str]]:
    """The NEXT index by source (an edge removed leaves its source's set empty)."""
    return {src: dsts for src, dsts in graph.next_out.items() if dsts}


def memory_of(sessions: list[list[str]]) -> UserMemory:
    memory = UserMemory.new("ada")
    for event in said(sessions):
        memory.fold(event)
    return memory


def test_a_failed_dream_puts_back_gists_it_grew_episodes_it_pruned_and_edges_it_contracted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memory = memory_of(HIKING[:3])
    assert Dreamer(EAGER, count).dream(memory, DueDream(6 * DAY, "ada", "window"))  # gists to grow later
    for event in said(HIKING)[len(said(HIKING[:3])) :]:  # the fourth session, on day 6
        memory.fold(event)
    due = DueDream(30 * DAY, "ada", "window")
    succeeded = copy.deepcopy(memory)
    events = Dreamer(EAGER, count).dream(succeeded, due)
    # What the failing dream would have changed: a gist citing the new session, dormant episodes,
    # and NEXT edges contracted around them.
    assert any(c is not None and c["edge_type"] == CITES for c in (change_as(e, EdgeUpserted) for e in events))
    assert any(change_as(e, NodeDormant) is not None for e in events)
    assert succeeded.graph.contracted
    before = memory.to_dict()

    monkeypatch.setattr(dream_module, "check_invariants", lambda graph, dormant: ["I1: forced for the test"])
    with pytest.raises(DreamInvariantError, match="forced for the test"):
        Dreamer(EAGER, count).dream(memory, due)
    assert memory.to_dict() == before
    assert edges_out(memory.graph) == edges_out(DreamGraph.from_dict(before["graph"]))
    assert memory.graph.journal is None
    # What dreaming made, by chunk (made.py), holds what the memory holds: no item of the failed dream.
    assert set(memory.graph.made.chunk_of) == set(memory.graph.made_items())
    assert sorted(memory.graph.cited.held()) == sorted(memory.graph.cite_items())  # nor a citation it added
    written = {key: record for key, record in memory_records(memory) if record is not None}
    read = read_memory("ada", written)
    assert read is not None and read.to_dict() == before

    monkeypatch.undo()
    again: list[MemoryEvent] = Dreamer(EAGER, count).dream(memory, due)
    assert [e["event_id"] for e in again] == [e["event_id"] for e in events]


def test_a_failed_dream_that_committed_concepts_leaves_eq_15_reading_them_uncommitted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The dream commits the hiking concepts and prunes by them, then fails: put back outside the
    fold, they are uncommitted again, and pruning's kept standing must say so too (the last hike,
    too recent to prune, is held by them again)."""
    memory = memory_of(HIKING)
    due = DueDream(6 * DAY + 600_000, "ada", "window")  # ten minutes after the last session
    monkeypatch.setattr(dream_module, "check_invariants", lambda graph, dormant: ["I1: forced for the test"])
    with pytest.raises(DreamInvariantError):
        Dreamer(EAGER, count).dream(memory, due)
    assert not memory.graph.committed()
    kept, held = _eligible(memory.graph, due.at_ms, EAGER)
    judged, judged_held = _scanned(memory.graph, due.at_ms, EAGER)
    assert [e.node_id for e in kept] == [e.node_id for e in judged] == [] and held == judged_held
