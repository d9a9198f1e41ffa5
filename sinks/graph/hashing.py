"""A content hash of a graph: equal graphs hash equal, whatever the write order.

sha256 over every node (id, sorted labels, properties as canonical JSON) in id order, then every
relationship (type, source id, target id, properties) in (source, target, type, id) order. Read
in pages of ``page`` rows so a large graph is never one giant answer.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator

from sinks.graph.cypher import edges as edge_cypher
from sinks.graph.cypher import nodes as node_cypher
from sinks.graph.executor import GraphExecutor, Row


def _pages(executor: GraphExecutor, query: str, page: int) -> Iterator[Row]:
    skip = 0
    while True:
        rows = executor.run(query, {"skip": skip, "limit": page})
        yield from rows
        if len(rows) < page:
            return
        skip += page


def _canonical(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def graph_content_hash(executor: GraphExecutor, page: int = 2000) -> str:
    """Hex sha256 of every node and relationship reachable as ``:Memory``."""
    digest = hashlib.sha256()
    for row in _pages(executor, node_cypher.node_page(), page):
        labels = sorted(str(label) for label in row["labels"]) if isinstance(row["labels"], list) else []
        digest.update(f"N\x1f{row['id']}\x1f{','.join(labels)}\x1f{_canonical(row['props'])}\n".encode())
    for row in _pages(executor, edge_cypher.edge_page(), page):
        digest.update(f"E\x1f{row['type']}\x1f{row['src']}\x1f{row['dst']}\x1f{_canonical(row['props'])}\n".encode())
    return digest.hexdigest()
