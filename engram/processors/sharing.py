"""Which memory every worker needs: the part of engram.memory replicated to all workers.

engram.memory is keyed by user (or by repo for code) and partitioned, and a worker's view holds
the memory of the partitions it owns: its users' memory. A request may also need memory that
hashes to other partitions: the shared layers (TEAM, ORGANIZATION, SYSTEM) and the code graphs
(USER-layer code included: a code question reaches the repo's graph). The owner's memory agent
replicates exactly that part to engram.memory.shared, which every worker reads in full, as a Kafka
Streams GlobalKTable is restored from its topic (streams/follow.py).

The rule, by change kind:
- a node or edge upsert is shared when its layer is not USER, or when it comes from a code change
  (it cites the code topic);
- removals, dormancy, re-awakening and erasures are always shared: they are rare, and applying one for a node
  a view does not hold changes nothing, so no view keeps a node its owner removed;
- fact decisions and accesses (FactAccessed, NodesAccessed) never are: they live with the user's
  partition, so a shared node's use, as a worker's view counts it, is its use by that worker's users.
"""

from __future__ import annotations

from engram.schemas.changes import change_as, kind_of
from engram.schemas.records import (
    EDGE_REMOVED,
    NODE_DORMANT,
    NODE_REAWAKENED,
    NODE_REMOVED,
    SUBJECT_ERASED,
    EdgeUpserted,
    MemoryEvent,
    NodeUpserted,
)

_ALWAYS = frozenset({NODE_REMOVED, EDGE_REMOVED, NODE_DORMANT, NODE_REAWAKENED, SUBJECT_ERASED})


def needed_everywhere(event: MemoryEvent, code_topic: str) -> bool:
    """Whether every worker's view needs ``event`` (see the module docstring)."""
    if kind_of(event) in _ALWAYS:
        return True
    node = change_as(event, NodeUpserted)
    edge = change_as(event, EdgeUpserted) if node is None else None
    change = node or edge
    if change is None:
        return False
    return change["layer"] != "USER" or any(source["topic"] == code_topic for source in event["sources"])
