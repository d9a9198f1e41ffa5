"""Node writes and reads. Every node is ``(:Memory:<Label> {id})``; ``id`` is unique."""

from __future__ import annotations

from engram.sinks.graph.identifiers import COMMON_LABEL, check_label


def merge_nodes(label: str) -> str:
    """Upsert nodes by id. ``$rows``: ``[{id, props}]``; ``props`` replaces every property (a
    NodeUpserted is the node's whole state) and includes ``id``."""
    return f"UNWIND $rows AS row MERGE (n:{COMMON_LABEL} {{id: row.id}}) SET n = row.props SET n:{check_label(label)}"


def create_or_set_nodes(label: str) -> str:
    """`merge_nodes` for a store that adds a label to an existing node in time linear in its nodes
    (FalkorDB: ``SET n:Event`` on a node made without it took 0.35 ms at 11,000 nodes and 1.5 ms
    at 66,000, against 0.02-0.03 ms flat for a node created with its labels, and it was most of the
    graph server's CPU in `engram bench ingest`). A node not there yet is CREATEd with its labels;
    one that is (an earlier upsert, or a placeholder an edge made) gets its properties and the
    label, a no-op where it has it already. Same ``$rows``. The OPTIONAL MATCH and the CREATE are
    one query, not one MERGE: right where the store runs write queries one at a time, as FalkorDB
    does; Neo4j keeps `merge_nodes` and its uniqueness constraint."""
    label = check_label(label)
    return (
        f"UNWIND $rows AS row OPTIONAL MATCH (m:{COMMON_LABEL} {{id: row.id}}) "
        "FOREACH (_ IN CASE WHEN m IS NULL THEN [1] ELSE [] END | "
        f"CREATE (n:{COMMON_LABEL}:{label}) SET n = row.props) "
        f"FOREACH (_ IN CASE WHEN m IS NULL THEN [] ELSE [1] END | SET m = row.props, m:{label})"
    )


def remove_nodes() -> str:
    """Delete nodes and their relationships. ``$ids``: node ids; absent ids are fine."""
    return f"UNWIND $ids AS id MATCH (n:{COMMON_LABEL} {{id: id}}) DETACH DELETE n"


def set_dormant() -> str:
    """Set the ``dormant`` flag of existing nodes. ``$ids``, ``$dormant`` (bool)."""
    return f"UNWIND $ids AS id MATCH (n:{COMMON_LABEL} {{id: id}}) SET n.dormant = $dormant"


def node_page() -> str:
    """Up to ``$limit`` nodes with ids above ``$after``, in id order, with labels and properties
    (keyset paging over the id index; start with ``$after = ""``)."""
    return (
        f"MATCH (n:{COMMON_LABEL}) WHERE n.id > $after "
        "RETURN n.id AS id, labels(n) AS labels, properties(n) AS props "
        "ORDER BY id LIMIT $limit"
    )


def count_nodes() -> str:
    return f"MATCH (n:{COMMON_LABEL}) RETURN count(n) AS count"


def duplicate_node_ids() -> str:
    """Ids held by more than one node (must be none)."""
    return f"MATCH (n:{COMMON_LABEL}) WITH n.id AS id, count(n) AS copies WHERE copies > 1 RETURN id, copies"


def nodes_by_id() -> str:
    """Selected nodes' core fields. ``$ids``."""
    return (
        f"MATCH (n:{COMMON_LABEL}) WHERE n.id IN $ids "
        "RETURN n.id AS id, labels(n) AS labels, n.kind AS kind, n.layer AS layer, n.text AS text, "
        "n.user_id AS user_id, n.event_time_ms AS event_time_ms, n.dormant AS dormant ORDER BY id"
    )
