"""`GraphExecutor` over FalkorDB's native client (the embedded default).

- One graph per executor (``FalkorConfig.graph``): tests use a unique graph name each.
- Index: ``CREATE INDEX FOR (n:Memory) ON (n.id)``; FalkorDB has no ``IF NOT EXISTS``, so an
  "already indexed" answer counts as success.
- Writes: 500 rows per ``UNWIND`` (measured here: ~42k nodes/s at that size).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from engram.sinks.base import SinkTransientError
from engram.sinks.graph.executor import GraphQueryError, Row
from engram.sinks.graph.identifiers import COMMON_LABEL

try:
    import redis.exceptions as redis_errors
    from falkordb import FalkorDB
except ImportError as exc:  # pragma: no cover - depends on the environment
    _msg = "FalkorExecutor needs the FalkorDB client: pip install 'falkordb>=1.8,<2'"
    raise ImportError(_msg) from exc

_ALREADY_INDEXED: Final = "already indexed"


@dataclass(frozen=True, slots=True)
class FalkorConfig:
    host: str = "127.0.0.1"
    port: int = 6379
    graph: str = "engram"
    password: str | None = None
    max_rows: int = 500
    socket_timeout_s: float = 30.0


class FalkorExecutor:
    """Runs Cypher on one FalkorDB graph. Connects in `setup`, not in the constructor."""

    def __init__(self, config: FalkorConfig | None = None) -> None:
        self.config = config or FalkorConfig()
        self._db: Any = None
        self._graph: Any = None

    @property
    def max_rows(self) -> int:
        return self.config.max_rows

    @property
    def labels_at_create(self) -> bool:
        """FalkorDB adds a label to an existing node in time linear in its nodes, and runs write
        queries one at a time (`GraphExecutor.labels_at_create`)."""
        return True

    def setup(self) -> None:
        if self._graph is not None:
            return
        c = self.config
        try:
            self._db = FalkorDB(
                host=c.host,
                port=c.port,
                password=c.password,
                socket_timeout=c.socket_timeout_s,
                socket_connect_timeout=c.socket_timeout_s,
            )
        except (redis_errors.ConnectionError, redis_errors.TimeoutError) as exc:
            msg = f"FalkorDB at {c.host}:{c.port} unreachable: {exc}"
            raise SinkTransientError(msg) from exc
        self._graph = self._db.select_graph(c.graph)
        self.run("RETURN 1")
        try:
            self.run(f"CREATE INDEX FOR (n:{COMMON_LABEL}) ON (n.id)")
        except GraphQueryError as exc:
            if _ALREADY_INDEXED not in str(exc):
                raise

    def run(self, query: str, params: Mapping[str, object] | None = None) -> list[Row]:
        if self._graph is None:
            msg = "FalkorExecutor.setup() was not called"
            raise GraphQueryError(msg)
        try:
            result = self._graph.query(query, dict(params or {}))
        except (redis_errors.ConnectionError, redis_errors.TimeoutError, redis_errors.BusyLoadingError) as exc:
            msg = f"FalkorDB at {self.config.host}:{self.config.port} unreachable: {exc}"
            raise SinkTransientError(msg) from exc
        except redis_errors.ResponseError as exc:
            msg = f"FalkorDB rejected the query: {exc}"
            raise GraphQueryError(msg) from exc
        names = [str(column[1]) for column in result.header]
        return [dict(zip(names, _plain(row), strict=True)) for row in result.result_set]

    def delete_graph(self) -> None:
        """Drop this executor's whole graph (tests, rebuilds)."""
        if self._graph is not None:
            self._graph.delete()

    def close(self) -> None:
        if self._db is not None:
            self._db.connection.close()
        self._db = None
        self._graph = None


def _plain(row: list[Any]) -> list[object]:
    """FalkorDB answers maps as OrderedDicts; give plain dicts like the neo4j driver does."""
    return [dict(v) if isinstance(v, dict) else v for v in row]
