"""What dreaming made is written by chunk (processors/dreaming/made.py): a node's row when what it
says changes, its citations in chunks of their own when they come."""

from __future__ import annotations

from engram.processors.dreaming.config import EAGER
from engram.processors.dreaming.dream import Dreamer
from engram.processors.dreaming.made import CITE_ITEM, made_ids
from engram.processors.dreaming.records import memory_records
from engram.processors.dreaming.schedule import DueDream
from tests.dreaming.test_checkpoint import HIKING, memory_of
from tests.dreaming.test_consolidate import DAY, count, said


def test_a_dream_that_revisits_a_gist_marks_the_citations_it_added_and_its_row_only_if_it_changed() -> None:
    memory = memory_of(HIKING[:3])
    first = Dreamer(EAGER, count).dream(memory, DueDream(6 * DAY, "ada", "window"))
    assert first and memory.graph.consolidated
    memory_records(memory)  # written: nothing is dirty
    cited_before = set(memory.graph.cited.chunk_of)

    memory.graph.apply(first)  # the dream's own events again (their echo through the topic)
    assert not memory.graph.made.dirty and not memory.graph.cited.dirty

    for event in said(HIKING)[len(said(HIKING[:3])) :]:  # the fourth session, on day 6
        memory.fold(event)
    Dreamer(EAGER, count).dream(memory, DueDream(30 * DAY, "ada", "window"))
    added = set(memory.graph.cited.chunk_of) - cited_before
    assert added and all(made_ids(item)[0] == CITE_ITEM for item in added)
    assert memory.graph.cited.dirty == {memory.graph.cited.chunk_of[item] for item in added}
