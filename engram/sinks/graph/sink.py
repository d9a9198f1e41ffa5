"""`GraphSink`: applies ``engram.memory`` MemoryEvents to a graph store through a `GraphExecutor`.

A batch is coalesced (`sinks.graph.plan`) and written group by group, one ``UNWIND $rows`` query
per label or relationship type and chunk of ``executor.max_rows`` rows: node removals, nodes,
facts, dormancy flags, then edge removals and edges. Every write is an upsert by id (a MERGE, or
on FalkorDB a node created with its labels when it is not there yet: `GraphExecutor.labels_at_create`),
so a batch retried or replayed after a crash neither loses nor duplicates a node or an edge, and
edges MERGE their endpoints by id, so an edge that arrives before its nodes is kept.

A SubjectErased runs between the writes planned before it and those after it
(`sinks.graph.cypher.subjects`): the placeholders that only the user's nodes touch, then every
node whose ``user_id`` is the user, DETACH DELETEd in chunks of ``executor.max_rows`` nodes until a
chunk comes back short. A replayed batch re-runs the same sequence, so what the user wrote before
the erasure is gone again and what came after it is written again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engram.processors.trust.erasure import KEPT_KIND_PREFIX
from engram.schemas.records import MemoryEvent
from engram.sinks.base import BatchingSink, SinkBatch, SinkConfig
from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import facts as fact_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.cypher import subjects as subject_cypher
from engram.sinks.graph.executor import GraphExecutor, GraphQueryError, Row
from engram.sinks.graph.hashing import graph_content_hash
from engram.sinks.graph.plan import EdgeWrite, GraphBatchPlan, GraphWrites, Props, plan_batch


@dataclass(slots=True)
class GraphSinkStats:
    """Counters since construction (entities written, not events)."""

    batches: int = 0
    nodes: int = 0
    edges: int = 0
    facts: int = 0
    removed_nodes: int = 0
    removed_edges: int = 0
    flagged: int = 0
    skipped: int = 0
    erasures: int = 0
    erased_nodes: int = 0
    swept_placeholders: int = 0


def _deleted(rows: list[Row]) -> int:
    """The ``deleted`` count of a chunked delete's one row."""
    deleted = rows[0].get("deleted") if rows else None
    if isinstance(deleted, bool) or not isinstance(deleted, int):
        msg = f"a chunked delete answered {rows!r}, not one row with an int 'deleted'"
        raise GraphQueryError(msg)
    return deleted


def _grouped(writes: dict[str, EdgeWrite]) -> dict[str, list[Props]]:
    groups: dict[str, list[Props]] = {}
    for edge_id in sorted(writes):
        w = writes[edge_id]
        groups.setdefault(w.rel_type, []).append({"id": edge_id, "src": w.src, "dst": w.dst, "props": w.props})
    return groups


class GraphSink(BatchingSink[MemoryEvent]):
    """Engram's nodes, edges and facts in a Cypher graph store."""

    def __init__(
        self,
        executor: GraphExecutor,
        sink_config: SinkConfig | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        super().__init__(sink_config, sleep)
        self.executor = executor
        self.stats = GraphSinkStats()

    def setup(self) -> None:
        self.executor.setup()

    def close(self) -> None:
        self.executor.close()

    def write(self, batch: SinkBatch[MemoryEvent]) -> None:
        self.apply(plan_batch(item.value for item in batch))

    def _unwind(self, query: str, key: str, rows: Sequence[object], **params: object) -> None:
        step = max(1, self.executor.max_rows)
        for start in range(0, len(rows), step):
            self.executor.run(query, {key: list(rows[start : start + step]), **params})

    def apply(self, plan: GraphBatchPlan) -> None:
        """Write one plan in batch order: its writes, then per erasure the delete and the writes
        after it."""
        self._write(plan)
        for erasure in plan.erasures:
            self._erase(erasure.user_id)
            self._write(erasure.then)
        self.stats.batches += 1
        self.stats.skipped += plan.skipped

    def _write(self, writes: GraphWrites) -> None:
        """One coalesced group in the fixed order (see the module docstring)."""
        stats = self.stats
        if writes.node_removes:
            self._unwind(node_cypher.remove_nodes(), "ids", sorted(writes.node_removes))
            stats.removed_nodes += len(writes.node_removes)
        by_label: dict[str, list[Props]] = {}
        for node_id in sorted(writes.nodes):
            write = writes.nodes[node_id]
            by_label.setdefault(write.label, []).append({"id": node_id, "props": write.props})
        at_create = self.executor.labels_at_create
        upsert_nodes = node_cypher.create_or_set_nodes if at_create else node_cypher.merge_nodes
        for label, rows in sorted(by_label.items()):
            self._unwind(upsert_nodes(label), "rows", rows)
            stats.nodes += len(rows)
        if writes.facts:
            upsert = fact_cypher.create_or_set_facts() if at_create else fact_cypher.merge_facts()
            self._unwind(upsert, "rows", [writes.facts[f] for f in sorted(writes.facts)])
            stats.facts += len(writes.facts)
        for value in (True, False):
            ids = sorted(i for i, flag in writes.flags.items() if flag is value)
            if ids:
                self._unwind(node_cypher.set_dormant(), "ids", ids, dormant=value)
                stats.flagged += len(ids)
        for rel_type, rows in sorted(_grouped(writes.edge_removes).items()):
            self._unwind(edge_cypher.remove_edges(rel_type), "rows", rows)
            stats.removed_edges += len(rows)
        for rel_type, rows in sorted(_grouped(writes.edges).items()):
            self._unwind(edge_cypher.merge_edges(rel_type), "rows", rows)
            stats.edges += len(rows)

    def _erase(self, user_id: str) -> None:
        """Sweep the placeholders only the user's nodes touch, then DETACH DELETE the user's nodes."""
        self.stats.swept_placeholders += self._delete_until_short(subject_cypher.sweep_subject_placeholders(), user_id)
        self.stats.erased_nodes += self._delete_until_short(subject_cypher.erase_subject_chunk(), user_id)
        self.stats.erasures += 1

    def _delete_until_short(self, query: str, user_id: str) -> int:
        """Run a chunked delete of `sinks.graph.cypher.subjects` until a run deletes fewer than
        ``max_rows`` nodes; return how many it deleted in all."""
        limit = max(1, self.executor.max_rows)
        params = {"user_id": user_id, "limit": limit, "kept_prefix": KEPT_KIND_PREFIX}
        total = 0
        while True:
            deleted = _deleted(self.executor.run(query, params))
            total += deleted
            if deleted < limit:
                return total

    def content_hash(self) -> str:
        """sha256 over every node and relationship (see `graph_content_hash`)."""
        return graph_content_hash(self.executor)
