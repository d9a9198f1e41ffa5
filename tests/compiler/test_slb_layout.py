"""The hit path's scoring layout: same scores and ranking as scoring from scratch, rebuilt when stale."""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import pytest

from engram.processors.slb import LookasideBuffer, ScoringLayout, SlbConfig, SlbEntry, TermMatrix, layout_for, rescore
from tests.compiler.haystack import distractors
from tests.compiler.memory import embedder

QUERIES = (
    "Who went hiking near the lake last week?",
    "Who adopted a grey cat from the shelter?",
    "What did someone bake on a rainy Sunday in March?",
    "zzz unknown words only",
)


class CountingVectors:
    """Node vectors from a fixed matrix; counts how many vectors were handed out."""

    def __init__(self, ids: Sequence[str], matrix: npt.NDArray[np.float32]) -> None:
        self.row = {node_id: i for i, node_id in enumerate(ids)}
        self.matrix = matrix
        self.served = 0

    def node_vectors(self, node_ids: Sequence[str]) -> npt.NDArray[np.float32]:
        self.served += len(node_ids)
        return self.matrix[[self.row[n] for n in node_ids]]


def _corpus() -> tuple[list[str], list[str], CountingVectors, TermMatrix]:
    texts = distractors(80)
    ids = [f"d{i:03d}" for i in range(len(texts))]
    return ids, texts, CountingVectors(ids, embedder().embed(texts)), TermMatrix(ids, texts)


def _reference(ids: Sequence[str], texts: Sequence[str], query: str, w: float = 0.5) -> list[tuple[str, float]]:
    """The documented hit scoring, from scratch: w·minmax(cosine) + (1 − w)·bm25/max, ties by id."""
    sims = embedder().embed(texts) @ embedder().embed([query])[0]
    bm25 = TermMatrix(ids, texts).term_scores(query, ids)
    span = sims.max() - sims.min()
    total = w * ((sims - sims.min()) / span if span > 0 else np.ones_like(sims))
    if bm25.max() > 0:
        total = total + (1 - w) * bm25 / bm25.max()
    return sorted(zip(ids, total.tolist(), strict=True), key=lambda p: (-p[1], p[0]))


def _layout_of(entry: SlbEntry) -> ScoringLayout | None:
    return entry.layout


def test_laid_out_bm25_is_bit_identical_to_term_scores() -> None:
    ids, _, _, terms = _corpus()
    picked = [*ids[5:40:3], "not-a-node", ids[0]]
    laid_out = terms.neighbourhood(picked)
    for query in QUERIES:
        assert np.array_equal(laid_out.scores(query), terms.term_scores(query, picked))
    assert terms.neighbourhood(["ghost"]).scores(QUERIES[0]).tolist() == [0.0]


@pytest.mark.parametrize("query", QUERIES)
def test_hit_ranking_equals_scoring_from_scratch(query: str) -> None:
    ids, texts, vectors, terms = _corpus()
    buffer = LookasideBuffer(embedder().dim, SlbConfig(neighbourhood_size=128))
    entry = buffer.insert(embedder().embed(["x"])[0], ids, [0.0] * 80, None, 0)
    ranked = rescore(entry, embedder().embed([query])[0], vectors, terms, query)
    expected = _reference(ids, texts, query)
    assert [c.node_id for c in ranked] == [n for n, _ in expected]
    np.testing.assert_allclose([c.score for c in ranked], [s for _, s in expected], atol=1e-6)
    assert rescore(entry, embedder().embed([query])[0], vectors, terms, query, limit=7) == ranked[:7]


def test_layout_is_built_once_per_fill_and_rebuilt_after_prefetch_or_for_other_providers() -> None:
    ids, texts, vectors, terms = _corpus()
    buffer = LookasideBuffer(embedder().dim, SlbConfig())
    entry = buffer.insert(embedder().embed([QUERIES[0]])[0], ids[:20], [1.0] * 20, None, 0)
    layout = layout_for(entry, vectors, terms)
    for query in QUERIES:
        rescore(entry, embedder().embed([query])[0], vectors, terms, query)
    assert vectors.served == 20 and entry.layout is layout  # hits reuse the fill's layout
    assert buffer.stage(entry, ids[20:25], 0.0) == 5
    assert _layout_of(entry) is None
    follow_up = texts[22]
    ranked = rescore(entry, embedder().embed([follow_up])[0], vectors, terms, follow_up)
    assert ranked[0].node_id == ids[22]  # a staged (prefetched) node is scored, and wins on its own text
    assert vectors.served == 45
    other = CountingVectors(ids, vectors.matrix)
    rescore(entry, embedder().embed([follow_up])[0], other, terms, follow_up)
    assert other.served == 25  # other providers: laid out again from them


def test_layout_is_never_persisted() -> None:
    ids, _, vectors, terms = _corpus()
    buffer = LookasideBuffer(embedder().dim, SlbConfig())
    entry = buffer.insert(embedder().embed([QUERIES[1]])[0], ids[:10], [1.0] * 10, None, 0)
    before = json.dumps(buffer.to_state(), sort_keys=True)
    layout_for(entry, vectors, terms)
    assert json.dumps(buffer.to_state(), sort_keys=True) == before
    restored = LookasideBuffer.from_state(json.loads(before), SlbConfig())
    assert restored.entries[0].layout is None
    query = QUERIES[1]
    assert rescore(restored.entries[0], embedder().embed([query])[0], vectors, terms, query) == rescore(
        entry, embedder().embed([query])[0], vectors, terms, query
    )
