"""Relationship writes and reads. A relationship is ``(:Memory)-[:TYPE {id}]->(:Memory)``."""

from __future__ import annotations

from engram.sinks.graph.identifiers import COMMON_LABEL, check_rel_type


def merge_edges(rel_type: str) -> str:
    """Upsert relationships by id. ``$rows``: ``[{id, src, dst, props}]``.

    Endpoints are merged by id first: an edge that arrives before its nodes (another partition,
    another batch) creates placeholder ``(:Memory {id})`` nodes that the node upsert completes.
    """
    return (
        "UNWIND $rows AS row "
        f"MERGE (a:{COMMON_LABEL} {{id: row.src}}) "
        f"MERGE (b:{COMMON_LABEL} {{id: row.dst}}) "
        f"MERGE (a)-[r:{check_rel_type(rel_type)} {{id: row.id}}]->(b) "
        "SET r = row.props"
    )


def remove_edges(rel_type: str) -> str:
    """Delete relationships by id between their endpoints. ``$rows``: ``[{id, src, dst}]``."""
    return (
        "UNWIND $rows AS row "
        f"MATCH (a:{COMMON_LABEL} {{id: row.src}})-[r:{check_rel_type(rel_type)} {{id: row.id}}]->"
        f"(b:{COMMON_LABEL} {{id: row.dst}}) "
        "DELETE r"
    )


def edges_from() -> str:
    """The outgoing relationships of the nodes in ``$ids``, with endpoints and properties."""
    return (
        f"MATCH (a:{COMMON_LABEL})-[r]->(b:{COMMON_LABEL}) WHERE a.id IN $ids "
        "RETURN type(r) AS type, a.id AS src, b.id AS dst, r.id AS id, properties(r) AS props"
    )


def count_edges() -> str:
    return f"MATCH (:{COMMON_LABEL})-[r]->(:{COMMON_LABEL}) RETURN count(r) AS count"


def duplicate_edge_ids() -> str:
    """Relationship ids held by more than one relationship (must be none)."""
    return (
        f"MATCH (:{COMMON_LABEL})-[r]->(:{COMMON_LABEL}) "
        "WITH r.id AS id, count(r) AS copies WHERE copies > 1 RETURN id, copies"
    )
