"""A content hash of a graph: equal graphs hash equal, whatever the write order.

sha256 over every node (id, sorted labels, properties as canonical JSON) in id order, and over
every relationship (type, source id, target id, properties) ordered by (source, target, type, id).
Nodes are read in keyset pages of ``page`` ids over the id index, and each page's outgoing
relationships with them, so a large graph is never one giant answer nor a quadratic SKIP scan.
"""

from __future__ import annotations

import hashlib
import json

from engram.sinks.graph.cypher import edges as edge_cypher
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.executor import GraphExecutor, Row


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _edge_key(row: Row) -> tuple[str, str, str, str]:
    return (str(row["src"]), str(row["dst"]), str(row["type"]), str(row["id"]))


def graph_content_hash(executor: GraphExecutor, page: int = 2000) -> str:
    """Hex sha256 of every ``:Memory`` node and every relationship between them."""
    nodes, edges = hashlib.sha256(), hashlib.sha256()
    after = ""
    while True:
        rows = executor.run(node_cypher.node_page(), {"after": after, "limit": page})
        for row in rows:
            labels = sorted(str(label) for label in row["labels"]) if isinstance(row["labels"], list) else []
            nodes.update(f"N\x1f{row['id']}\x1f{','.join(labels)}\x1f{_canonical(row['props'])}\n".encode())
        if not rows:
            break
        ids = [str(row["id"]) for row in rows]
        for edge in sorted(executor.run(edge_cypher.edges_from(), {"ids": ids}), key=_edge_key):
            src, dst, rel_type, _ = _edge_key(edge)
            edges.update(f"E\x1f{rel_type}\x1f{src}\x1f{dst}\x1f{_canonical(edge['props'])}\n".encode())
        if len(rows) < page:
            break
        after = ids[-1]
    return hashlib.sha256(f"{nodes.hexdigest()}\x1f{edges.hexdigest()}".encode()).hexdigest()
