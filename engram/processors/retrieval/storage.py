"""How the ``MemoryView`` lays out what it stores: its configuration, edges, row slots and blocks.

A node lives in the row block of its (instance, layer): ``user:<owner>`` for USER-layer nodes, the
node's org, team or ``system`` for the shared layers (``processors.rebac.node_instance``), so a
search picks the blocks its viewer may see before it computes any similarity.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from engram.processors.retrieval.bm25 import BM25Params
from engram.processors.retrieval.types import NodeRecord
from engram.schemas.records import LAYERS, EventRef, Layer, NodeUpserted


@dataclass(frozen=True, slots=True)
class ViewConfig:
    """``text_index``/``vector_index`` switch the accelerators off (searches then raise
    IndexUnavailableError and the hybrid search falls back). ``chunk_rows``: the largest step a block's
    arrays grow by (a quarter of their rows until then).
    ``indexed_properties``: node properties whose values BM25 indexes with the text (who spoke a
    turn is part of what it is about). ``context_vectors``: a turn is matched by the unit vector of
    v + a*v_prev + b*v_next over ``context_edge_type`` edges (see rows.RowBlock); (0, 0) = off.
    ``compact_rows``: a block is rebuilt without its tombstones (a replaced or removed node's old
    rows) once they number at least this many and a quarter of its rows.
    With a store (retrieval/stored.py): ``fetched_cache``, how many nodes read back from it the view
    keeps for the reads that follow a search; ``hot_turns``, the most live nodes of ``hot_kinds``
    (a conversation's turns, the bulk of a user's memory) a user's block keeps in RAM, the ones
    least recently written or used leaving for the store past it (None: every node stays).
    Consolidated nodes, facts, concepts and the TOC always stay: the compiler reads them by scan."""

    bm25: BM25Params = field(default_factory=BM25Params)
    text_index: bool = True
    vector_index: bool = True
    chunk_rows: int = 4096
    indexed_properties: tuple[str, ...] = ("speaker",)
    context_vectors: tuple[float, float] = (0.5, 0.25)
    context_edge_type: str = "NEXT"
    compact_rows: int = 256
    fetched_cache: int = 1024
    hot_turns: int | None = None
    hot_kinds: tuple[str, ...] = ("event",)

    def __post_init__(self) -> None:
        if self.hot_turns is not None and self.hot_turns < 1:
            msg = f"ViewConfig.hot_turns must be 1 or more (None: no cap), got {self.hot_turns}"
            raise ValueError(msg)


@dataclass(frozen=True, slots=True)
class Edge:
    edge_id: str
    edge_type: str
    src: str
    dst: str
    weight: float
    layer: Layer


@dataclass(slots=True)
class Slot:
    block: BlockKey
    row: int


BlockKey = tuple[str, Layer]


def block_key(record: NodeRecord) -> BlockKey:
    """A node's block: the instance it lives in, and its layer."""
    return (record.home, record.layer)


def approx_tokens(text: str) -> int:
    return math.ceil(len(text) / 4)


_LAYERS: Final[dict[str, Layer]] = {layer: layer for layer in LAYERS}


def node_record(node: NodeUpserted, sources: tuple[EventRef, ...], count: Callable[[str], int]) -> NodeRecord:
    """The record of an upserted node; ``count`` gives the tokens when the event carries none.

    Its ids, kind, layer, owner, session and property names are interned: each decoded
    event brings its own copies of these strings, and the view keeps one record per node and its
    edges name the same ids (`engram bench ram`)."""
    return NodeRecord(
        node_id=sys.intern(node["node_id"]),
        kind=sys.intern(node["kind"]),
        layer=one_layer(node["layer"]),
        user_id=interned(node["user_id"]),
        session_id=interned(node["session_id"]),
        text=node["text"],
        tokens=node["tokens"] or count(node["text"]),
        event_time_ms=node["event_time_ms"],
        properties={sys.intern(name): value for name, value in node["properties"].items()},
        provenance=sources,
        instance=interned(node.get("instance")),
    )


def one_layer(layer: Layer) -> Layer:
    """The module's own copy of a layer's name (a decoded event's is its own)."""
    return _LAYERS.get(layer, layer)


def interned(value: str | None) -> str | None:
    """``value`` interned (one copy of a string many records name), None as it is."""
    return None if value is None else sys.intern(value)
