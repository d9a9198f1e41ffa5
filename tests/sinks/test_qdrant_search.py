"""System 1's vector side over Qdrant (edge engine) with the ReBAC filters, against the in-process
`MemoryView` the compile hot path searches: same top-k, in the same order, for every principal."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram.processors.embedding.vectors import to_wire
from engram.processors.rebac import Viewer, is_visible
from engram.processors.retrieval.view import MemoryView
from engram.schemas.events import memory_event, node_upserted, stable_id
from engram.schemas.records import LAYERS, NODE_UPSERTED, EventRef, Layer, MemoryEvent
from engram.sinks.base import SinkConfig
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.sinks.qdrant.search import visible_search
from engram.sinks.qdrant.sink import QdrantSink
from engram.sinks.qdrant.store import SearchHit
from tests.sinks.events import T0_MS, Workload, as_items, conversation

DIM = 16
WORKLOAD = Workload(users=3, turns_per_user=40, concepts_per_user=3, dim=DIM, seed=5)
PRINCIPALS: tuple[tuple[Layer, ...], ...] = (("USER",), ("USER", "TEAM"), ("TEAM", "ORGANIZATION"), LAYERS, ())
ORGS = ("org:acme", "org:globex", None)
READS: tuple[frozenset[str] | None, ...] = (None, frozenset({"system", "org:acme"}), frozenset({"org:globex"}))


def _shared_nodes(rng: np.random.Generator) -> list[MemoryEvent]:
    """ORGANIZATION and SYSTEM points (owned by someone or by no one; in org:acme, org:globex or,
    written before instances, in no named one), next to the users' USER/TEAM ones."""
    out: list[MemoryEvent] = []
    for n in range(12):
        layer: Layer = "ORGANIZATION" if n % 2 else "SYSTEM"
        vector = rng.standard_normal(DIM).astype(np.float32)
        instance = ORGS[n % 3] if layer == "ORGANIZATION" else None
        node = node_upserted(
            stable_id("shared", n), "event", layer, T0_MS, text=f"shared {n}", instance=instance,
            user_id="user-0" if n % 3 == 0 else None, vector=to_wire(vector / np.linalg.norm(vector)),
        )  # fmt: skip
        ref: EventRef = {"topic": "engram.turns", "partition": 1, "offset": n}
        out.append(memory_event("shared", T0_MS, [ref], NODE_UPSERTED, node))
    return out


def _visible(hit: SearchHit, viewer: Viewer, layers: tuple[Layer, ...]) -> bool:
    owner, instance = hit.payload.get("user_id"), str(hit.payload["instance"])
    return is_visible(
        str(hit.payload["layer"]), owner if isinstance(owner, str) else None, instance, viewer, frozenset(layers)
    )


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[EdgeVectorStore, MemoryView]]:
    events = conversation(WORKLOAD) + _shared_nodes(np.random.default_rng(9))
    store = EdgeVectorStore(Path(tmp_path_factory.mktemp("qdrant-search")))
    sink = QdrantSink(store, sink_config=SinkConfig(max_batch=64))
    sink.setup()
    for item in as_items(events):
        sink.add(item)
    sink.flush()
    view = MemoryView()
    view.apply(events)
    try:
        yield store, view
    finally:
        sink.close()


@pytest.mark.parametrize("layers", PRINCIPALS)
def test_qdrant_with_rebac_filters_equals_the_in_process_view(
    stores: tuple[EdgeVectorStore, MemoryView], layers: tuple[Layer, ...]
) -> None:
    store, view = stores
    rng = np.random.default_rng(len(layers))
    viewers = [Viewer(user, reads) for user in ("user-0", "user-2", "nobody") for reads in READS]
    for viewer in viewers:
        for _ in range(8):
            query = rng.standard_normal(DIM).astype(np.float32)
            query /= np.linalg.norm(query)
            hits = visible_search(store, [float(x) for x in query], 10, viewer, layers)
            assert all(_visible(hit, viewer, layers) for hit in hits)
            mirrored = view.vector_search(query, 10, viewer, layers)
            assert [h.id for h in hits] == [c.node_id for c in mirrored], (viewer, layers)
            assert np.allclose([h.score for h in hits], [c.score for c in mirrored], atol=1e-4)
