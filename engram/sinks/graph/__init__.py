"""The graph sink: Engram's nodes, edges and facts in a Cypher store, from ``engram.memory``.

- `identifiers`: label/type/bound validation and the kind -> label table.
- `cypher`: query builders, one module per entity kind (``nodes``, ``edges``, ``facts``,
  ``subjects`` for erasures, ``expand`` for System 2 reads). Values are always ``$params``.
- `executor`: the slim `GraphExecutor` protocol (``run``, ``setup``, ``close``, ``max_rows``).
- `falkor`: `FalkorExecutor` (FalkorDB native client; the embedded default).
- `neo4j_executor`: `Neo4jExecutor` (official neo4j driver; production).
- `plan`: a batch of MemoryEvents coalesced per entity id, split at each SubjectErased (pure).
- `sink`: `GraphSink(BatchingSink[MemoryEvent])`; `hashing`: `graph_content_hash`.

Graph model: every node is ``(:Memory:<Label> {id, kind, layer, ...})`` (Event, Concept, Fact,
Rule, User, CodeFile, Module, Class, Function, Method, CodeChunk, ...); relationships carry
``{id, weight, layer}`` and their type from EdgeUpserted. Times are epoch-ms ints; ``dormant``
is a bool.

What differs between the adapters, and stays inside them:

- id index: Falkor ``CREATE INDEX FOR (n:Memory) ON (n.id)`` with "already indexed" tolerated;
  Neo4j ``CREATE CONSTRAINT memory_id IF NOT EXISTS FOR (n:Memory) REQUIRE n.id IS UNIQUE``
  (the index plus safety for concurrent MERGEs from several workers).
- rows per UNWIND: Falkor 500; Neo4j 1,000 (keep it tiny over FalkorDB's Bolt port).
- graph selection: Falkor a graph name per executor; Neo4j ``database`` (FalkorDB's Bolt ignores it).
- retryable errors (`SinkTransientError`): Falkor redis connection/timeout/loading; Neo4j
  ServiceUnavailable, SessionExpired, TransientError. Rejected queries: `GraphQueryError`.
- temporal values: none in either; epoch-ms ints (FalkorDB has no ``datetime()`` and its Bolt
  crashes on temporal values).
"""

from engram.sinks.graph.executor import GraphExecutor, GraphQueryError
from engram.sinks.graph.hashing import graph_content_hash
from engram.sinks.graph.identifiers import (
    CypherBuildError,
    InvalidBoundError,
    InvalidIdentifierError,
    check_label,
    check_rel_type,
    label_for_kind,
)
from engram.sinks.graph.plan import GraphBatchPlan, GraphErasure, GraphWrites, plan_batch
from engram.sinks.graph.sink import GraphSink, GraphSinkStats

__all__ = [
    "CypherBuildError",
    "GraphBatchPlan",
    "GraphErasure",
    "GraphExecutor",
    "GraphQueryError",
    "GraphSink",
    "GraphSinkStats",
    "GraphWrites",
    "InvalidBoundError",
    "InvalidIdentifierError",
    "check_label",
    "check_rel_type",
    "graph_content_hash",
    "label_for_kind",
    "plan_batch",
]
