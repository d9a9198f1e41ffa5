"""The bounds `engram bench ingest` measures alone in the same run: decoding one turn's vector as
the old and the new MemoryEvent schema carry it, qdrant-edge taking one point, and FalkorDB
upserting one node as its graph grows."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from engram.benchmarks.ingest import texts
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import MemoryEvent, NodeUpserted
from engram.sinks.graph.executor import GraphExecutor


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


def graph_upsert_us(
    executor: GraphExecutor, sizes: Sequence[int] = (10_000, 40_000), rows: int = 200
) -> dict[str, Any]:
    """Wall µs a row for the graph server to upsert new nodes once its graph holds each of ``sizes``
    nodes, with the sink's two queries: MERGE, then SET the label (`merge_nodes`, what Neo4j runs)
    against created with its labels (`create_or_set_nodes`, what FalkorDB runs). ``executor``'s
    graph should be empty; it is filled here (the caller drops it)."""
    from engram.sinks.graph.cypher.nodes import create_or_set_nodes, merge_nodes

    queries = {"merge_then_label": merge_nodes("Event"), "created_with_labels": create_or_set_nodes("Event")}
    out: dict[str, Any] = {"nodes": list(sizes), **{name: [] for name in queries}}
    held = 0
    for size in sizes:
        while held < size:
            step = min(executor.max_rows, size - held)
            executor.run(queries["created_with_labels"], {"rows": _new_nodes(f"fill{held}-", step)})
            held += step
        for name, query in queries.items():
            started = time.perf_counter()
            executor.run(query, {"rows": _new_nodes(f"{name}{size}-", rows)})
            out[name].append(round((time.perf_counter() - started) / rows * 1e6, 1))
            held += rows
    return out


def _new_nodes(prefix: str, count: int) -> list[dict[str, object]]:
    return [{"id": f"{prefix}{i}", "props": {"id": f"{prefix}{i}", "kind": "event", "text": "a turn"}}
            for i in range(count)]  # fmt: skip


def embedder_name() -> str:
    from engram.processors.embedding import default_embedder

    return default_embedder().name
