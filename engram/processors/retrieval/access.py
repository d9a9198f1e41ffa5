"""A node's use, as the view keeps it: how many compiled contexts held it and when the last one did.

Accesses come from the log (NodesAccessed, and FactAccessed for the facts a facts block showed:
processors/compiler/accessed.py), so a view rebuilt by replay holds the same counts. They are
kept on the node's record as the properties the decay score reads (processors/compiler/scoring.py):
``access_count`` (+1 per access) and ``last_access_ms`` (the latest access's event time, epoch ms).
Counting is commutative (a sum and a max), so an access the view applies before the node arrives
(a shared node still on its way from the replica topic) counts all the same.

A use is recorded at most once per ``ACCESS_STEP_MS`` of event time per node (``due``): the compile
path sends no access for a node the view saw used less than that before the request. So
``access_count`` counts the hours in which compiled contexts held the node, and an agent asking
about the same things all hour adds no record per request to the log, the broker, the view and the
dream state (one event per request cost the worker 2.5 ms of CPU per request: bench compile).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from engram.processors.retrieval.types import NodeRecord

ACCESS_STEP_MS: Final = 60 * 60_000
ACCESS_COUNT: Final = "access_count"
LAST_ACCESS_MS: Final = "last_access_ms"


@dataclass(frozen=True, slots=True)
class Access:
    """``count`` accesses, the latest at ``last_ms`` (event time, epoch ms)."""

    count: int = 0
    last_ms: int = -1

    def then(self, at_ms: int) -> Access:
        """This use and one more at ``at_ms``."""
        return Access(self.count + 1, max(self.last_ms, at_ms))


def with_access(record: NodeRecord, access: Access) -> NodeRecord:
    """``record`` with ``access`` in its properties (the rest of it unchanged)."""
    counted = {ACCESS_COUNT: str(access.count), LAST_ACCESS_MS: str(access.last_ms)}
    return replace(record, properties={**record.properties, **counted})


def due(last_ms: int, at_ms: int) -> bool:
    """Whether a use at ``at_ms`` is recorded after one at ``last_ms`` (-1: none yet)."""
    return last_ms < 0 or at_ms >= last_ms + ACCESS_STEP_MS
