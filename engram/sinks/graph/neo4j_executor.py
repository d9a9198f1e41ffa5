"""`GraphExecutor` over the official neo4j driver (production: neo4j 5).

- Schema: ``CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (n:Memory) REQUIRE n.id IS UNIQUE``
  (Neo4j 5 syntax). The uniqueness constraint also indexes ``id``, and it is what keeps two
  workers MERGE-ing the same node concurrently from creating two (FalkorDB serializes writes).
- Writes: 1,000 rows per ``UNWIND`` by default; auto-commit queries, one per call, so that a
  retried batch simply re-runs its idempotent MERGEs.
- Connection failures (`ServiceUnavailable`, `SessionExpired`, transient server errors) become
  `SinkTransientError`; `setup` tries ``connect_attempts`` times before giving up.

FalkorDB's Bolt port answers this driver too, and the tests use it for a smoke test only: it has
no ``IF NOT EXISTS`` nor constraints (pass ``create_index=False``), crashes on requests over ~4 KB (tiny
``max_rows``), has no transactions and hangs on every other reconnect (share one driver).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.sinks.base import SinkTransientError
from engram.sinks.graph.executor import GraphQueryError, Row
from engram.sinks.graph.identifiers import COMMON_LABEL

try:
    import neo4j
    from neo4j import exceptions as neo4j_errors
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "Neo4jExecutor needs the neo4j driver: pip install 'neo4j>=6.4,<7'"
    raise ImportError(_msg) from exc

_SCHEMA: Final = f"CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (n:{COMMON_LABEL}) REQUIRE n.id IS UNIQUE"
_RETRYABLE: Final = (neo4j_errors.ServiceUnavailable, neo4j_errors.SessionExpired, neo4j_errors.TransientError)


class Neo4jExecutor:
    """Runs Cypher through a neo4j `Driver`. Connects (verifies) in `setup`, not in the constructor.

    Either pass a driver you own (``Neo4jExecutor(driver)``, it is not closed here) or let
    `connect` build one from a URI (then `close` closes it).
    """

    def __init__(
        self,
        driver: neo4j.Driver,
        *,
        database: str | None = None,
        max_rows: int = 1000,
        create_index: bool = True,
        connect_attempts: int = 3,
        owns_driver: bool = False,
    ) -> None:
        self._driver: neo4j.Driver | None = driver
        self._database = database
        self._max_rows = max_rows
        self._create_index = create_index
        self._connect_attempts = connect_attempts
        self._owns_driver = owns_driver
        self._ready = False

    @classmethod
    def connect(
        cls,
        uri: str,
        auth: tuple[str, str] | None = None,
        *,
        database: str | None = None,
        max_rows: int = 1000,
        create_index: bool = True,
        **driver_settings: Any,
    ) -> Neo4jExecutor:
        """An executor that owns a new driver for ``uri`` (the driver connects on first use, in `setup`)."""
        driver = neo4j.GraphDatabase.driver(uri, auth=auth, **driver_settings)
        return cls(driver, database=database, max_rows=max_rows, create_index=create_index, owns_driver=True)

    @property
    def max_rows(self) -> int:
        return self._max_rows

    @property
    def labels_at_create(self) -> bool:
        """Neo4j MERGEs, then sets the label: its uniqueness constraint keeps concurrent writers
        from making two nodes of one id (`GraphExecutor.labels_at_create`)."""
        return False

    def setup(self) -> None:
        if self._ready:
            return
        for attempt in range(1, self._connect_attempts + 1):
            try:
                self.run("RETURN 1 AS ok")
                break
            except SinkTransientError:
                if attempt == self._connect_attempts:
                    raise
        if self._create_index:
            self.run(_SCHEMA)
        self._ready = True

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[Row]:
        if self._driver is None:
            msg = "Neo4jExecutor is closed"
            raise GraphQueryError(msg)
        try:
            with self._driver.session(database=self._database) as session:
                # Queries come from the validated builders in sinks.graph.cypher, never from input.
                result = session.run(query, dict(params or {}))
                return [dict(record.data()) for record in result]
        except _RETRYABLE as exc:
            msg = f"graph database unreachable: {exc}"
            raise SinkTransientError(msg) from exc
        except neo4j_errors.Neo4jError as exc:
            msg = f"graph database rejected the query: {exc}"
            raise GraphQueryError(msg) from exc

    def close(self) -> None:
        if self._driver is not None and self._owns_driver:
            self._driver.close()
        self._driver = None
        self._ready = False
