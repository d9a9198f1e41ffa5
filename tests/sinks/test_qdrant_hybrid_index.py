"""System 1's two lists read from Qdrant (qdrant-edge), against the in-process view: the same
nodes with the same scores, and nothing another user owns."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from engram.processors.rebac import Viewer
from engram.processors.retrieval.sparse import SparseBM25
from engram.processors.retrieval.view import MemoryView
from engram.schemas.events import stable_id
from engram.schemas.records import Layer
from engram.sinks.qdrant.hybrid_index import HybridIndex, points_from_view
from tests.retrieval.builders import Events

DIM = 8
USER_ONLY: tuple[Layer, ...] = ("USER",)
TEXTS = (
    "my sister adopted a greyhound named Luna last spring",
    "we hiked the ridge trail and the dogs loved it",
    "the ridge trail was closed after the storm",
    "I started pottery classes on tuesdays",
    "pottery is harder than it looks, my first bowl cracked",
    "Luna sleeps on the sofa all day",
    "the storm knocked out power for two days",
    "my first marathon is in October",
)
QUERIES = ("greyhound Luna", "ridge trail storm", "pottery bowl", "marathon in October", "sofa")


def _memory(user: str, rng: np.random.Generator, texts: tuple[str, ...]) -> Events:
    events = Events()
    ids = [stable_id(user, n) for n in range(len(texts))]
    for node_id, text in zip(ids, texts, strict=True):
        events.node(
            node_id, text, user_id=user, vector=rng.standard_normal(DIM).tolist(), properties={"speaker": "Ann"}
        )
    for src, dst in zip(ids, ids[1:], strict=False):
        events.edge("NEXT", src, dst)
    return events


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[MemoryView, HybridIndex, SparseBM25]]:
    rng = np.random.default_rng(3)
    view = MemoryView()
    view.apply(_memory("u-ann", rng, TEXTS).events)
    index = HybridIndex(Path(tmp_path_factory.mktemp("hybrid")) / "nodes", DIM)
    points, sparse = points_from_view(view, [stable_id("u-ann", n) for n in range(len(TEXTS))])
    index.write(points)
    try:
        yield view, index, sparse
    finally:
        index.close()


@pytest.mark.parametrize("query", QUERIES)
def test_qdrant_lists_are_the_views_lists(indexed: tuple[MemoryView, HybridIndex, SparseBM25], query: str) -> None:
    view, index, _ = indexed
    vector = np.random.default_rng(len(query)).standard_normal(DIM).astype(np.float32)
    lists = index.lists(query, vector, 5, Viewer("u-ann"), USER_ONLY)
    own_vector = view.vector_search(vector, 5, Viewer("u-ann"), USER_ONLY)
    own_text = view.text_search(query, 5, Viewer("u-ann"), USER_ONLY)
    assert [c.node_id for c in lists["vector"]] == [c.node_id for c in own_vector]
    assert [c.score for c in lists["vector"]] == pytest.approx([c.score for c in own_vector], abs=1e-5)
    assert [c.node_id for c in lists["bm25"]] == [c.node_id for c in own_text]
    assert [c.score for c in lists["bm25"]] == pytest.approx([c.score for c in own_text], rel=1e-4)


def test_another_users_nodes_are_never_scored(tmp_path: Path) -> None:
    rng = np.random.default_rng(4)
    view = MemoryView()
    view.apply(_memory("u-ann", rng, TEXTS).events + _memory("u-bob", rng, TEXTS).events)
    index = HybridIndex(tmp_path / "nodes", DIM)
    try:
        ids = [stable_id(user, n) for user in ("u-ann", "u-bob") for n in range(len(TEXTS))]
        index.write(points_from_view(view, ids, SparseBM25())[0])
        bobs = {stable_id("u-bob", n) for n in range(len(TEXTS))}
        for query in QUERIES:
            lists = index.lists(query, rng.standard_normal(DIM).astype(np.float32), 20, Viewer("u-ann"), USER_ONLY)
            found = {c.node_id for found in lists.values() for c in found}
            assert found and not found & bobs
            assert index.lists(query, None, 20, Viewer("u-carol"), USER_ONLY) == {"bm25": []}
    finally:
        index.close()
