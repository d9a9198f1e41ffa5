"""The slim executor protocol the graph sink depends on (not a whole driver class).

Adapters: `sinks.graph.falkor.FalkorExecutor` (FalkorDB's native client, the embedded default)
and `sinks.graph.neo4j_executor.Neo4jExecutor` (the official neo4j driver, production).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, runtime_checkable

Row = dict[str, object]


class GraphQueryError(Exception):
    """The store rejected a query (syntax, constraint, type). Retrying will not help."""


@runtime_checkable
class GraphExecutor(Protocol):
    @property
    def max_rows(self) -> int:
        """How many rows one ``UNWIND $rows`` write may carry on this store."""
        ...

    def setup(self) -> None:
        """Connect, verify with ``RETURN 1``, and create the ``:Memory(id)`` index. Idempotent."""
        ...

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[Row]:
        """Run one query; rows as dicts keyed by the RETURN aliases.

        Raises `SinkTransientError` when the store is unreachable (worth retrying) and
        `GraphQueryError` when it rejects the query.
        """
        ...

    def close(self) -> None:
        """Release the connection. Idempotent."""
        ...
