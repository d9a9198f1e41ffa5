"""Embeddings on the wire: a node's vector travels as little-endian float32 bytes (NodeUpserted's
``vector``), which decodes in one copy; events written before it carry ``embedding``, a list of
floats. Both read back through `node_vector`."""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt

from engram.schemas.records import NodeUpserted

WIRE: Final = np.dtype("<f4")


def to_wire(vector: npt.ArrayLike) -> bytes:
    """``vector`` as little-endian float32 bytes."""
    return np.asarray(vector, dtype=WIRE).tobytes()


def node_vector(node: NodeUpserted) -> npt.NDArray[np.float32] | None:
    """The node's embedding (float32, read-only when it comes from ``vector``), or None."""
    raw = node.get("vector")
    if raw:
        return np.frombuffer(raw, dtype=WIRE).astype(np.float32, copy=False)
    if node["embedding"] is not None:
        return np.asarray(node["embedding"], dtype=np.float32)
    return None
