"""BM25 as a sparse vector (processors/retrieval/sparse.py): the document side carries BM25's
saturated, length-normalized term frequency, the query side weight 1 per distinct term."""

from __future__ import annotations

import pytest

from engram.processors.retrieval.bm25 import BM25Params
from engram.processors.retrieval.sparse import SparseBM25, query_vector, term_id
from engram.processors.retrieval.text import terms


def test_term_ids_are_stable_across_processes_and_versions() -> None:
    assert (term_id("luna"), term_id("greyhound")) == (2961254857, 2390975349)


def test_a_documents_weights_are_bm25s_term_frequency_part() -> None:
    bm25 = SparseBM25(BM25Params(k1=0.9, b=0.4), avgdl=4.0)
    vector = bm25.document(["trail", "ridge", "trail"])
    weights = dict(zip(vector.indices, vector.values, strict=True))
    norm = 0.9 * (1 - 0.4 + 0.4 * 3 / 4.0)
    assert weights[term_id("trail")] == pytest.approx(2 * 1.9 / (2 + norm))
    assert weights[term_id("ridge")] == pytest.approx(1 * 1.9 / (1 + norm))
    assert list(vector.indices) == sorted(vector.indices)


def test_a_query_weighs_each_distinct_term_once() -> None:
    vector = query_vector("Trails, trails and the ridge!")
    assert vector.values == (1.0, 1.0)
    assert set(vector.indices) == {term_id(t) for t in terms("trail ridge")}
    assert query_vector("the and of") == query_vector("")
