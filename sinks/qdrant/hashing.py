"""A content hash of a vector store: equal stores hash equal, whatever the write order.

sha256 over, per collection in name order and per point in id order: the collection name, the
id, the vector rounded to ``digits`` decimals, and the payload as canonical JSON (sorted keys,
no whitespace). Rounding absorbs float noise from normalization; ``-0`` is written as ``0``.
"""

from __future__ import annotations

import hashlib
import json

from sinks.qdrant.store import VectorStore


def _vector_text(vector: list[float], digits: int) -> str:
    parts = []
    for x in vector:
        text = f"{x:.{digits}f}"
        parts.append(text[1:] if text.startswith("-") and float(text) == 0.0 else text)
    return ",".join(parts)


def vector_content_hash(store: VectorStore, digits: int = 5) -> str:
    """Hex sha256 of every point in every collection of ``store``."""
    digest = hashlib.sha256()
    for collection in store.collections():
        points = sorted(store.scroll_all(collection), key=lambda p: p.id)
        digest.update(f"collection\x1f{collection}\x1f{len(points)}\n".encode())
        for point in points:
            payload = json.dumps(point.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest.update(f"{point.id}\x1f{_vector_text(point.vector, digits)}\x1f{payload}\n".encode())
    return digest.hexdigest()
