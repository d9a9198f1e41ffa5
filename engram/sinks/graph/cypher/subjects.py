"""A subject's erasure (SubjectErased, ``engram forget``): every node that belongs to one user.

A node belongs to a user when its ``user_id`` property is that user: memory nodes
(`sinks.graph.plan.node_props`), the user's ``:Fact`` nodes and its ``:User`` bookkeeping node
(`fact_row`), and the ``:Rule`` nodes dreamed from its memory; not code nodes (a ``kind`` starting
with ``$kept_prefix``, ``code_``: processors/trust/erasure.py), the organization's, which stay.
DETACH DELETE takes their relationships with them, those to other users' nodes included.

Placeholders (nodes an edge MERGEd before their own upsert arrived: an ``id``, no ``kind``) carry
no ``user_id``. Those whose every neighbour is the user's are swept first, in the same erasure:
without that, a batch replayed across an erasure would differ from the first run, because its
earlier edges re-MERGE the user's erased ids as placeholders (a new turn's NEXT from the user's
last stored turn, say) that the user_id match then misses. A placeholder that also touches a node
of someone else stays, with that relationship. Sweeping runs before the erase, while the user's
nodes still mark which placeholders were only theirs.

Both statements are small (FalkorDB's Bolt port crashes on requests over ~4 KB), delete at most
``$limit`` nodes per run so that one transaction never holds a whole user's graph, and return one
row, ``deleted``: the caller runs each until it deletes fewer than ``$limit``. Every run is
idempotent, so a crash between runs is finished by the replay.
"""

from __future__ import annotations

from engram.sinks.graph.identifiers import COMMON_LABEL

_ERASED = "{v}.user_id = $user_id AND ({v}.kind IS NULL OR NOT {v}.kind STARTS WITH $kept_prefix)"


def sweep_subject_placeholders() -> str:
    """DETACH DELETE up to ``$limit`` placeholders (no ``kind``) whose every neighbour is erased
    with ``$user_id``; returns ``deleted``."""
    return (
        f"MATCH (n:{COMMON_LABEL})--(p:{COMMON_LABEL}) WHERE {_ERASED.format(v='n')} AND p.kind IS NULL "
        "WITH DISTINCT p "
        f"MATCH (p)--(q:{COMMON_LABEL}) "
        f"WITH p, count(q) AS degree, sum(CASE WHEN {_ERASED.format(v='q')} THEN 1 ELSE 0 END) AS owned "
        "WHERE owned = degree "
        "WITH p LIMIT $limit "
        "DETACH DELETE p "
        "RETURN count(p) AS deleted"
    )


def erase_subject_chunk() -> str:
    """DETACH DELETE up to ``$limit`` nodes erased with ``$user_id``; returns ``deleted``."""
    return (
        f"MATCH (n:{COMMON_LABEL}) WHERE {_ERASED.format(v='n')} "
        "WITH n LIMIT $limit "
        "DETACH DELETE n "
        "RETURN count(n) AS deleted"
    )


def count_subject_nodes() -> str:
    """How many nodes erased with ``$user_id`` are still there (0 after an erasure)."""
    return f"MATCH (n:{COMMON_LABEL}) WHERE {_ERASED.format(v='n')} RETURN count(n) AS count"
