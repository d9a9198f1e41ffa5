"""The bounds `engram bench ingest` measures alone in the same run: decoding one turn's vector as
the old and the new MemoryEvent schema carry it, and qdrant-edge taking one point."""

from __future__ import annotations

import time

from engram.benchmarks.ingest import texts
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import MemoryEvent, NodeUpserted


def embedding_decode_us(n: int = 3000) -> dict[str, float]:
    """CPU µs to decode one turn's event node and read its 384-d vector: as MemoryEvent v3 wrote it
    (a list of floats) and as v4 does (float32 bytes), measured here in the same run."""
    import numpy as np

    from engram.processors.embedding.vectors import node_vector, to_wire
    from engram.schemas.codec import encode_as_writer, history_schema
    from engram.schemas.events import memory_event, node_upserted
    from engram.schemas.records import NODE_UPSERTED, EventRef

    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    vector = np.random.default_rng(0).standard_normal(384).astype(np.float32)
    ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 0}
    node = node_upserted("n", "event", "USER", 0, text=texts(None)[0], user_id="u", vector=to_wire(vector))
    v4 = codec.encode(memory_event("u", 0, [ref], NODE_UPSERTED, node))
    old_node = {**{k: v for k, v in node.items() if k != "vector"}, "embedding": vector.tolist()}
    v3 = encode_as_writer(history_schema("MemoryEvent", 3), {**memory_event("u", 0, [ref], NODE_UPSERTED, node),
                                                              "change": (NODE_UPSERTED, old_node)})  # fmt: skip
    out: dict[str, float] = {}
    for name, raw in (("float_list_v3", v3), ("float32_bytes_v4", v4)):
        started = time.process_time()
        for _ in range(n):
            change = change_as(codec.decode(raw), NodeUpserted)
            if change is None or node_vector(change) is None:
                msg = f"the {name} event lost its vector"
                raise RuntimeError(msg)
        out[name] = round((time.process_time() - started) / n * 1e6, 1)
    out["ratio"] = round(out["float_list_v3"] / max(out["float32_bytes_v4"], 1e-9), 2)
    return out


def qdrant_point_us(n: int = 3000) -> dict[str, float]:
    """CPU µs for qdrant-edge to take one turn's point (``qdrant_edge.Point``: the Python vector and
    payload converted for the engine; the Qdrant sink's per-point bound, measured alone in the
    same run): with the payload the sink writes (sinks/qdrant/plan.py), with only the fields its
    filters and tenancy read, and without a payload."""
    import numpy as np
    import qdrant_edge as qe

    from engram.processors.embedding import default_embedder
    from engram.processors.embedding.vectors import to_wire
    from engram.schemas.events import node_upserted
    from engram.schemas.records import EventRef
    from engram.sinks.qdrant.plan import point_payload

    vector = np.random.default_rng(0).standard_normal(default_embedder().dim).astype(np.float32).tolist()
    ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": 0}
    node = node_upserted("n", "event", "USER", 0, text=texts(None)[0], user_id="u", vector=to_wire(np.array(vector)))
    full = point_payload(node, [ref])
    filters = {k: full[k] for k in ("user_id", "layer", "instance", "dormant")}
    out: dict[str, float] = {}
    for name, payload in (("full_payload", full), ("filter_fields_only", filters), ("no_payload", {})):
        started = time.process_time()
        for _ in range(n):
            qe.Point("00000000000000000000000000000001", vector, payload)
        out[name] = round((time.process_time() - started) / n * 1e6, 1)
    out["payload_fields"] = len(full)
    return out


def embedder_name() -> str:
    from engram.processors.embedding import default_embedder

    return default_embedder().name
