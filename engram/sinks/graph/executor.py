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

    @property
    def labels_at_create(self) -> bool:
        """True where adding a label to an existing node costs time linear in the graph (FalkorDB):
        the sink then creates new nodes with their labels (`cypher.nodes.create_or_set_nodes`),
        which is right only where the store runs write queries one at a time. False: MERGE, then
        SET the label (`cypher.nodes.merge_nodes`; Neo4j, whose uniqueness constraint keeps
        concurrent MERGEs from making two nodes)."""
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
