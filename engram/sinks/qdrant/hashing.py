"""A content hash of a vector store: equal stores hash equal, whatever the write order.

sha256 over, per collection in name order and per point in id order: the collection name, the
id, the vector rounded to ``digits`` decimals (as little-endian float64 bytes, ``-0`` folded to
``0``), and the payload as canonical JSON (sorted keys, no whitespace). Rounding absorbs float
noise from normalization.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np

from engram.sinks.qdrant.store import VectorStore


def _vector_bytes(vector: list[float], digits: int) -> bytes:
    rounded = np.round(np.asarray(vector, dtype=np.float64), digits) + 0.0  # + 0.0 turns -0.0 into 0.0
    return rounded.astype("<f8").tobytes()


def vector_content_hash(store: VectorStore, digits: int = 5) -> str:
    """Hex sha256 of every point in every collection of ``store``."""
    digest = hashlib.sha256()
    for collection in store.collections():
        points = sorted(store.scroll_all(collection, page=1024), key=lambda p: p.id)
        digest.update(f"collection\x1f{collection}\x1f{len(points)}\n".encode())
        for point in points:
            payload = json.dumps(point.payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
            digest.update(f"{point.id}\x1f".encode())
            digest.update(_vector_bytes(point.vector, digits))
            digest.update(f"\x1f{payload}\n".encode())
    return digest.hexdigest()
