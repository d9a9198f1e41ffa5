"""What dreaming made is written by chunk (processors/dreaming/made.py): a node's row when what it
says changes, its citations in chunks of their own when they come."""

from __future__ import annotations

import json

from engram.processors.dreaming.config import EAGER
from engram.processors.dreaming.dream import Dreamer
from engram.processors.dreaming.graph import CITES
from engram.processors.dreaming.records import memory_records
from engram.processors.dreaming.schedule import DueDream
from engram.schemas.events import edge_upserted, memory_event, node_removed
from engram.schemas.records import EDGE_UPSERTED, NODE_REMOVED
from tests.dreaming.test_checkpoint import HIKING, memory_of
from tests.dreaming.test_consolidate import DAY, count, said


def test_a_dream_that_revisits_a_gist_marks_the_citations_it_added_and_its_row_only_if_it_changed() -> None:
    memory = memory_of(HIKING[:3])
    first = Dreamer(EAGER, count).dream(memory, DueDream(6 * DAY, "ada", "window"))
    assert first and memory.graph.consolidated
    memory_records(memory)  # written: nothing is dirty
    cited_before = set(memory.graph.cited.held())

    memory.graph.apply(first)  # the dream's own events again (their echo through the topic)
    assert not memory.graph.made.dirty and not memory.graph.cited.dirty

    for event in said(HIKING)[len(said(HIKING[:3])) :]:  # the fourth session, on day 6
        memory.fold(event)
    Dreamer(EAGER, count).dream(memory, DueDream(30 * DAY, "ada", "window"))
    added = set(memory.graph.cited.held()) - cited_before
    assert added and added == set(memory.graph.cite_items()) - cited_before  # each once, where the node is
    held = memory.graph.cited.members
    chunk_of = {(node_id, c): chunk for chunk, nodes in held.items() for node_id, cites in nodes.items() for c in cites}
    assert memory.graph.cited.dirty == {chunk_of[cite] for cite in added}


def test_a_removed_node_takes_its_citations_out_of_their_chunks() -> None:
    memory = memory_of(HIKING)
    Dreamer(EAGER, count).dream(memory, DueDream(30 * DAY, "ada", "window"))
    memory_records(memory)
    gist = max(memory.graph.consolidated.values(), key=lambda node: len(node.cites))
    assert gist.cites
    gone = memory_event("ada", 31 * DAY, [], NODE_REMOVED, node_removed(gist.node_id, gist.kind, "erased"))
    memory.graph.apply([gone])
    assert not [cite for cite in memory.graph.cited.held() if cite[0] == gist.node_id]
    assert sorted(memory.graph.cited.held()) == sorted(memory.graph.cite_items())
    assert memory.graph.cited.dirty  # the chunks that held them are written again


def test_a_written_chunk_of_citations_does_not_change_with_the_memory_after_it() -> None:
    """The table keeps the records written; a citation added later goes to the next write, not into
    the record already written (a batch that fails re-reads the memory from the table)."""
    memory = memory_of(HIKING)
    Dreamer(EAGER, count).dream(memory, DueDream(30 * DAY, "ada", "window"))
    written = memory_records(memory)
    before = json.dumps(written)
    gist = next(iter(memory.graph.consolidated.values()))
    cite = edge_upserted(CITES, gist.node_id, "an-episode-cited-later", "USER")
    memory.graph.apply([memory_event("ada", 31 * DAY, [], EDGE_UPSERTED, cite)])
    assert "an-episode-cited-later" in gist.cites and memory.graph.cited.dirty
    assert json.dumps(written) == before
