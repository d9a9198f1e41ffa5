"""System 2 over the graph store: the compiler's `GraphStoreExpander` as two Cypher reads.

1. `visible_expansion`: nodes within the hops of the seeds, every path node visible to the
   principal (ReBAC in the ``WHERE`` clause, before anything is scored), nearest first, bounded.
2. `edges_among`: the edges among the seeds and the found nodes, for PPR and the causal order.

Any failure of the store (unreachable, timed out, rejected) becomes `StoreUnavailableError`, and
the compiler then expands in process. The executor should be the compile path's own, with a short
socket timeout (`FalkorConfig.socket_timeout_s`). In the worker, `DeadlineExpander` runs the reads
on the compile path's `BlockingCalls` and waits for them at most a share of what is left of the
request's budget (`StoreTimeoutError` past it): a slow store must not stall the request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from functools import partial

from engram.processors.compiler.deliberate import (
    GraphStoreExpander,
    StoreExpansion,
    StoreTimeoutError,
    StoreUnavailableError,
)
from engram.processors.compiler.expand import GraphEdge
from engram.processors.rebac import Viewer, cypher_layer_predicate
from engram.processors.retrieval.types import NodeRecord
from engram.schemas.records import LAYERS, EventRef, Layer
from engram.sinks.base import SinkTransientError
from engram.sinks.deadline import BlockingCalls, DeadlineExceededError
from engram.sinks.graph.cypher.expand import edges_among, visible_expansion
from engram.sinks.graph.executor import GraphExecutor, GraphQueryError, Row

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class CypherExpander:
    """``cooldown_s``: after a failure the store is not asked again for this long (each request
    would otherwise pay a connect timeout while it is down); then `setup` reconnects."""

    executor: GraphExecutor
    cooldown_s: float = 5.0
    clock: Callable[[], float] = time.monotonic
    _failed_at: float | None = None

    def warm_up(self) -> bool:
        """Connect now, at worker start, so that the first request does not pay for the connect
        inside its deadline. A store that is down is no error: requests expand in process until
        it answers (`expand` reconnects). Returns whether the store answered."""
        try:
            self.executor.setup()
        except (GraphQueryError, SinkTransientError) as exc:
            logger.warning("graph store not reachable at start (%s); System 2 expands in process until it is", exc)
            return False
        return True

    def expand(
        self,
        seeds: Sequence[str],
        viewer: Viewer,
        layers: Collection[Layer],
        edge_types: Sequence[str],
        hops: int,
        limit: int,
    ) -> StoreExpansion:
        if self._failed_at is not None and self.clock() - self._failed_at < self.cooldown_s:
            msg = f"cooling down for {self.cooldown_s:g} s after a failure"
            raise StoreUnavailableError(msg)
        _, params = cypher_layer_predicate(viewer, layers, var="x")
        try:
            self.executor.setup()
            rows = self.executor.run(
                visible_expansion(hops, edge_types), {**params, "seeds": list(seeds), "limit": limit}
            )
            found = [(record, _int(row["hops"])) for row in rows if (record := node_record(row)) is not None]
            records = tuple(record for record, _ in found)
            ids = list(dict.fromkeys([*seeds, *(r.node_id for r in records)]))
            among = self.executor.run(edges_among(), {"ids": ids}) if records else []
        except (GraphQueryError, SinkTransientError) as exc:
            self._failed_at = self.clock()
            raise StoreUnavailableError(str(exc)) from exc
        self._failed_at = None
        wanted = frozenset(edge_types)
        edges = tuple(
            GraphEdge(str(r["src"]), str(r["dst"]), str(r["type"]), _weight(r.get("weight")))
            for r in among
            if r["type"] in wanted
        )
        return StoreExpansion(records, {record.node_id: hop for record, hop in found}, edges)


@dataclass(frozen=True, slots=True)
class DeadlineExpander:
    """``store``'s expansion on ``calls``' pool, waited for at most ``share`` of what is left of the
    request's budget, so the in-process expansion keeps the rest when it times out. One call at a
    time per store (`BlockingCallsConfig.max_running`): while an abandoned one still runs, the next
    request falls back at once ("busy")."""

    store: GraphStoreExpander
    calls: BlockingCalls
    share: float = 0.5
    name: str = "graph store"

    def expand(
        self,
        seeds: Sequence[str],
        viewer: Viewer,
        layers: Collection[Layer],
        edge_types: Sequence[str],
        hops: int,
        limit: int,
    ) -> StoreExpansion:
        read = partial(self.store.expand, list(seeds), viewer, frozenset(layers), tuple(edge_types), hops, limit)
        try:
            return self.calls.call(self.name, read, share=self.share)
        except DeadlineExceededError as exc:
            if exc.busy:
                msg = "busy: an earlier expansion has not answered yet"
                raise StoreUnavailableError(msg) from exc
            raise StoreTimeoutError(exc.waited_ms) from exc


def node_record(row: Row) -> NodeRecord | None:
    """A graph row as a `NodeRecord`; None for a row that cannot be an item: no known layer, no text,
    or no source event to cite (the graph's own ``:User`` and ``:Fact`` bookkeeping nodes)."""
    layer = row.get("layer")
    provenance = _provenance(row.get("sources"))
    if layer not in LAYERS or not row.get("text") or not provenance:
        return None
    user = row.get("user_id")
    session = row.get("session_id")
    instance = row.get("instance")
    return NodeRecord(
        node_id=str(row["id"]),
        kind=str(row.get("kind") or ""),
        layer=layer,
        user_id=str(user) if user is not None else None,
        session_id=str(session) if session is not None else None,
        text=str(row.get("text") or ""),
        tokens=_int(row.get("tokens")),
        event_time_ms=_int(row.get("event_time_ms")),
        provenance=provenance,
        instance=str(instance) if instance is not None else None,
    )


def source_ref(source: str) -> EventRef:
    """Inverse of the graph plan's ``topic/partition/offset`` (topic names cannot contain '/')."""
    topic, partition, offset = source.rsplit("/", 2)
    return {"topic": topic, "partition": int(partition), "offset": int(offset)}


def _provenance(value: object) -> tuple[EventRef, ...]:
    return tuple(source_ref(s) for s in value if isinstance(s, str)) if isinstance(value, list) else ()


def _int(value: object) -> int:
    return int(value) if isinstance(value, int | float) else 0


def _weight(value: object) -> float:
    return float(value) if isinstance(value, int | float) else 1.0
