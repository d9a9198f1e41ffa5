"""A content hash of a `MemoryView`: equal views hash equal, whatever order built them.

sha256 over every node record (canonical JSON of its fields, dormant or not, in RAM or in the view's
store) in id order, and over
every edge (id, type, ends, weight, layer) in id order. Replaying the same log into two empty views
must give one hash (`engram bench replay`)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict

from engram.processors.retrieval.view import MemoryView


def view_content_hash(view: MemoryView) -> str:
    digest = hashlib.sha256()
    for record in view.known_records():
        fields = {**asdict(record), "dormant": view.is_dormant(record.node_id)}
        digest.update(json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str).encode() + b"\n")
    for edge in sorted(view.edges(), key=lambda e: e.edge_id):
        digest.update(f"E\x1f{edge.edge_id}\x1f{edge.edge_type}\x1f{edge.src}\x1f{edge.dst}\x1f"
                      f"{edge.weight:.6f}\x1f{edge.layer}\n".encode())  # fmt: skip
    return digest.hexdigest()
