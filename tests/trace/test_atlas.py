"""Concepts (V_concept), REF edges and the Atlas hierarchy."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pytest

from engram.processors.embedding.base import Vectors
from engram.processors.embedding.vectors import node_vector
from engram.processors.trace.builder import TraceBuilder, event_node_id
from engram.processors.trace.config import BALANCED, PRESETS, TraceConfig
from engram.processors.trace.navigate import TraceIndex
from engram.processors.trace.state import state_from_dict, state_to_dict
from engram.schemas.records import ConversationTurn
from tests.trace.conftest import refs
from tests.trace.turns import ref, turn, upserted_edges, upserted_nodes


def unit(*xs: float) -> list[float]:
    v = np.array(xs, dtype=np.float64)
    return list(v / np.linalg.norm(v))


# Cosines: a~a2 0.95 (same concept), a~c 0.5 (same Atlas parent, different concept), a~b 0.
VECTORS = {
    "a": unit(1, 0, 0, 0),
    "a2": unit(0.95, np.sqrt(1 - 0.95**2), 0, 0),
    "c": unit(0.5, 0, np.sqrt(1 - 0.25), 0),
    "b": unit(0, 0, 0, 1),
}


class TableEmbedder:
    name = "table"
    dim = 4

    def embed(self, texts: Sequence[str]) -> Vectors:
        return np.array([VECTORS[t] for t in texts], dtype=np.float32)


def test_concepts_form_online_and_organise_into_an_atlas() -> None:
    # Raw cosines (no centring) so the geometry above is exactly what the Atlas sees.
    config = TraceConfig(tau_ref=0.6, atlas_thresholds=(0.4,), centre=False)
    builder = TraceBuilder(config, embedder=TableEmbedder())
    texts = ["a", "a2", "c", "b"]
    events = builder.apply_batch([(turn(i, t), ref(i)) for i, t in enumerate(texts)])
    refs_by_turn = {e["src"]: (e["dst"], e["weight"]) for e in upserted_edges(events) if e["edge_type"] == "REF"}
    concept_a, weight = refs_by_turn[event_node_id("u1", "s1-t0")]
    assert weight == 1.0
    assert refs_by_turn[event_node_id("u1", "s1-t1")] == (concept_a, 0.95)  # joins, id stays
    concept_c = refs_by_turn[event_node_id("u1", "s1-t2")][0]
    concept_b = refs_by_turn[event_node_id("u1", "s1-t3")][0]
    assert len({concept_a, concept_b, concept_c}) == 3

    state = builder.state("u1")
    parent = state.atlas_parent(concept_a)
    assert parent is not None and state.atlas_parent(concept_c) == parent
    assert state.atlas_children(parent) == [concept_a, concept_c]
    assert state.atlas_parent(concept_b) not in (None, parent)
    child_of = {(e["src"], e["dst"]) for e in upserted_edges(events) if e["edge_type"] == "CHILD_OF"}
    assert (concept_a, parent) in child_of and (concept_c, parent) in child_of

    concepts = [n for n in upserted_nodes(events) if n["kind"] == "concept"]
    refreshed = [n for n in concepts if n["node_id"] == concept_a and n["properties"]["members"] == "2"]
    assert len(refreshed) == 1  # the centroid is republished at 2 members
    vector = node_vector(refreshed[0])
    assert vector is not None and vector[1] > 0.0

    index = TraceIndex.from_events(events)
    assert index.episodes(concept_a) == [event_node_id("u1", "s1-t0"), event_node_id("u1", "s1-t1")]
    assert set(index.episodes(parent, with_children=True)) == {event_node_id("u1", f"s1-t{i}") for i in (0, 1, 2)}

    restored = state_from_dict(json.loads(json.dumps(state_to_dict(state))))
    assert restored.atlas_children(parent) == [concept_a, concept_c]
    assert state_to_dict(restored) == state_to_dict(state)


def test_every_locomo_turn_refs_a_concept(locomo_turns: dict[str, list[ConversationTurn]]) -> None:
    turns = locomo_turns["26"]
    builder = TraceBuilder()
    events = builder.apply_batch(refs(turns))
    ref_edges = [e for e in upserted_edges(events) if e["edge_type"] == "REF"]
    assert {e["src"] for e in ref_edges} == {event_node_id("26", t["turn_id"]) for t in turns}
    assert all(e["weight"] > BALANCED.tau_ref for e in ref_edges)
    ids, centroids = builder.state("26").concepts(0)
    assert 1 < len(ids) < len(turns) and centroids.shape == (len(ids), 256)
    assert np.allclose(np.linalg.norm(centroids, axis=1), 1.0, atol=1e-5)
    index = TraceIndex.from_events(events)
    sizes = [len(index.episodes(c)) for c in ids]
    assert sum(sizes) == len(turns)
    # Centring keeps one running-mean concept from swallowing the conversation (raw cosines: most turns).
    assert max(sizes) < len(turns) // 5 and len(ids) >= 20


def test_presets_are_valid_configs() -> None:
    assert set(PRESETS) == {"fine", "balanced", "coarse"}
    for config in PRESETS.values():
        assert list(config.thresholds) == sorted(config.thresholds, reverse=True)
    with pytest.raises(ValueError, match="decrease"):
        TraceConfig(tau_ref=0.3, atlas_thresholds=(0.5,))
