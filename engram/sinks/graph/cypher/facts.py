"""Fact nodes: ``(:Memory:Fact {id: fact_id})-[:ABOUT]->(:Memory:User)``.

Facts are never deleted: a retraction or a prune is a new FactDecided whose properties
(``status``, ``valid_to_ms``) replace the old ones, so the graph keeps what was believed.
"""

from __future__ import annotations

from engram.sinks.graph.cypher.nodes import create_or_set_nodes
from engram.sinks.graph.identifiers import COMMON_LABEL


def merge_facts() -> str:
    """Upsert facts and their ABOUT edge to the user node.

    ``$rows``: ``[{id, props, user_node_id, user_props, about_id}]``; ``props`` replaces the
    fact's properties, ``user_props`` is merged into the user node's.
    """
    return f"UNWIND $rows AS row MERGE (f:{COMMON_LABEL} {{id: row.id}}) SET f = row.props SET f:Fact {_ABOUT_USER}"


def create_or_set_facts() -> str:
    """`merge_facts` for a store that adds a label to an existing node in time linear in its nodes
    (`nodes.create_or_set_nodes`, whose caveat holds): a new fact is created with its labels. Same
    ``$rows``. A new user node still gets its ``User`` label added, once per user."""
    return f"{create_or_set_nodes('Fact')} WITH row MATCH (f:{COMMON_LABEL} {{id: row.id}}) {_ABOUT_USER}"


_ABOUT_USER = (
    f"MERGE (u:{COMMON_LABEL} {{id: row.user_node_id}}) "
    "SET u += row.user_props "
    "SET u:User "
    "MERGE (f)-[:ABOUT {id: row.about_id}]->(u)"
)


def facts_of_user() -> str:
    """A user's facts with a given status (``active``, ``retracted``, ``pruned``), oldest first.
    ``$user_id``, ``$status``."""
    return (
        f"MATCH (f:{COMMON_LABEL}:Fact) WHERE f.user_id = $user_id AND f.status = $status "
        "RETURN f.id AS id, f.subject AS subject, f.relation AS relation, f.value AS value, "
        "f.category AS category, f.confidence AS confidence, f.valid_from_ms AS valid_from_ms, "
        "f.valid_to_ms AS valid_to_ms, f.recorded_at_ms AS recorded_at_ms "
        "ORDER BY recorded_at_ms, id"
    )
