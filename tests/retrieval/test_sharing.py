"""Which memory every worker's view needs (processors/sharing.py)."""

from __future__ import annotations

import pytest

from engram.processors.sharing import needed_everywhere
from engram.schemas.events import (
    edge_upserted,
    fact_accessed,
    memory_event,
    node_removed,
    node_upserted,
    nodes_accessed,
)
from engram.schemas.records import (
    EDGE_UPSERTED,
    FACT_ACCESSED,
    NODE_REMOVED,
    NODE_UPSERTED,
    NODES_ACCESSED,
    EventRef,
    Layer,
    MemoryEvent,
)

CODE = "t.engram.code"
TURN: EventRef = {"topic": "t.engram.turns", "partition": 0, "offset": 3}
CHANGE: EventRef = {"topic": CODE, "partition": 1, "offset": 7}


def node(layer: Layer, source: EventRef) -> MemoryEvent:
    change = node_upserted("n1", "event", layer, 1, text="hello", user_id="ada")
    return memory_event("ada", 1, [source], NODE_UPSERTED, change)


@pytest.mark.parametrize(
    ("layer", "source", "shared"),
    [
        ("USER", TURN, False),
        ("TEAM", TURN, True),
        ("ORGANIZATION", TURN, True),
        ("SYSTEM", TURN, True),
        ("USER", CHANGE, True),  # a user's code: the repo's graph is everyone's to reach
    ],
)
def test_upserts_are_shared_by_layer_or_code_origin(layer: Layer, source: EventRef, shared: bool) -> None:
    assert needed_everywhere(node(layer, source), CODE) is shared
    edge = memory_event("ada", 1, [source], EDGE_UPSERTED, edge_upserted("NEXT", "a", "b", layer))
    assert needed_everywhere(edge, CODE) is shared


def test_removals_are_always_shared_and_fact_events_never() -> None:
    removed = memory_event("ada", 1, [TURN], NODE_REMOVED, node_removed("n1", "event", "gone"))
    assert needed_everywhere(removed, CODE)
    accessed = memory_event("ada", 1, [TURN], FACT_ACCESSED, fact_accessed("ada", ["f1"], "q1"))
    assert not needed_everywhere(accessed, CODE)
    used = memory_event("ada", 1, [TURN], NODES_ACCESSED, nodes_accessed(["team-runbook"], "q1"))
    assert not needed_everywhere(used, CODE)  # a read stays with the requester's partition
