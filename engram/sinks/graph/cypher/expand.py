"""Read builders for System 2: multi-hop expansion within the caller's authorized layers."""

from __future__ import annotations

from collections.abc import Sequence

from engram.processors.rebac import Viewer, cypher_layer_predicate
from engram.sinks.graph.identifiers import COMMON_LABEL, check_hops, check_rel_type


def expand_from_seeds(
    hops: int,
    rel_types: Sequence[str] | None = None,
    *,
    include_dormant: bool = False,
    same_user: bool = False,
) -> str:
    """Nodes within ``hops`` of the seeds, nearest first, every node on the path in ``$layers``.

    Params: ``$seeds`` (node ids), ``$layers``, ``$limit``, and ``$user_id`` when ``same_user``
    (then only nodes of that user, or of no user, are returned). A variable-length bound cannot
    be a parameter, so ``hops`` is validated as an int in 1..6 and interpolated; so are the
    validated relationship types.
    """
    types = "" if not rel_types else ":" + "|".join(check_rel_type(t) for t in rel_types)
    where = [
        "n.id <> s.id",
        "all(x IN nodes(p) WHERE x.layer IN $layers)",
    ]
    if not include_dormant:
        where.append("all(x IN nodes(p) WHERE coalesce(x.dormant, false) = false)")
    if same_user:
        where.append("(n.user_id IS NULL OR n.user_id = $user_id)")
    return (
        f"MATCH (s:{COMMON_LABEL}) WHERE s.id IN $seeds "
        f"MATCH p = (s)-[{types}*1..{check_hops(hops)}]-(n:{COMMON_LABEL}) "
        f"WHERE {' AND '.join(where)} "
        "WITH n, min(length(p)) AS hops "
        "RETURN n.id AS id, labels(n) AS labels, n.kind AS kind, n.layer AS layer, n.text AS text, "
        "n.user_id AS user_id, n.event_time_ms AS event_time_ms, hops "
        "ORDER BY hops, id LIMIT $limit"
    )


def edges_among() -> str:
    """Relationships whose both ends are in ``$ids`` (to build an in-process view for PPR)."""
    return (
        f"MATCH (a:{COMMON_LABEL})-[r]->(b:{COMMON_LABEL}) WHERE a.id IN $ids AND b.id IN $ids "
        "RETURN a.id AS src, type(r) AS type, b.id AS dst, r.weight AS weight ORDER BY src, type, dst"
    )


def visible_expansion(hops: int, rel_types: Sequence[str] | None = None) -> str:
    """System 2's read: awake nodes within ``hops`` of ``$seeds``, nearest first, where every node on
    the path (seed included) is visible to the principal under the ReBAC rule
    (`processors.rebac.cypher_layer_predicate`: ``$layers``, ``$user_layer``, ``$user_id``,
    ``$any_instance``, ``$instances``), with
    the fields the compiler scores. Params also: ``$seeds``, ``$limit``."""
    types = "" if not rel_types else ":" + "|".join(check_rel_type(t) for t in rel_types)
    visible, _ = cypher_layer_predicate(Viewer(""), (), var="x")
    return (
        f"MATCH (s:{COMMON_LABEL}) WHERE s.id IN $seeds "
        f"MATCH p = (s)-[{types}*1..{check_hops(hops)}]-(n:{COMMON_LABEL}) "
        f"WHERE n.id <> s.id AND all(x IN nodes(p) WHERE {visible} AND coalesce(x.dormant, false) = false) "
        "WITH n, min(length(p)) AS hops "
        "RETURN n.id AS id, n.kind AS kind, n.layer AS layer, n.user_id AS user_id, n.instance AS instance, "
        "n.session_id AS session_id, n.text AS text, n.tokens AS tokens, n.event_time_ms AS event_time_ms, "
        "n.sources AS sources, hops "
        "ORDER BY hops, id LIMIT $limit"
    )
