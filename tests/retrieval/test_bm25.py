"""BM25 against hand-computed scores, and the text analyzer."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.processors.retrieval.bm25 import BM25Params, PostingIndex, bm25_scores, document_frequencies
from engram.processors.retrieval.text import query_terms, stem, terms


def _corpus() -> PostingIndex:
    index = PostingIndex()
    index.add(0, ["cat", "dog"])
    index.add(1, ["cat", "cat", "bird"])
    index.add(2, ["fish"])
    return index


def test_scores_match_hand_computation() -> None:
    index = _corpus()
    [(rows, scores)] = bm25_scores([(index, np.ones(3, dtype=np.bool_))], ["cat"], BM25Params(k1=0.9, b=0.4))
    # N = 3, df = 2, avgdl = 2: idf = ln(1 + 1.5 / 2.5) = ln 1.6
    idf = math.log(1.6)
    d0 = idf * 1 * 1.9 / (1 + 0.9 * (0.6 + 0.4 * 2 / 2))
    d1 = idf * 2 * 1.9 / (2 + 0.9 * (0.6 + 0.4 * 3 / 2))
    assert dict(zip(rows.tolist(), scores.tolist(), strict=True)) == pytest.approx({0: d0, 1: d1})


def test_statistics_come_from_the_allowed_rows_only() -> None:
    index = _corpus()
    mask = np.array([True, True, False])
    [(rows, scores)] = bm25_scores([(index, mask)], ["cat"], BM25Params(k1=1.2, b=0.75))
    # N = 2, df = 2, avgdl = 2.5: idf = ln(1 + 0.5 / 2.5)
    idf = math.log(1.2)
    d0 = idf * 2.2 / (1 + 1.2 * (0.25 + 0.75 * 2 / 2.5))
    d1 = idf * 2 * 2.2 / (2 + 1.2 * (0.25 + 0.75 * 3 / 2.5))
    assert dict(zip(rows.tolist(), scores.tolist(), strict=True)) == pytest.approx({0: d0, 1: d1})


def test_two_indexes_share_one_set_of_statistics() -> None:
    left, right = PostingIndex(), PostingIndex()
    left.add(0, ["cat", "dog"])
    right.add(0, ["cat", "cat", "bird"])
    right.add(1, ["fish"])
    merged = bm25_scores([(left, np.ones(1, np.bool_)), (right, np.ones(2, np.bool_))], ["cat"], BM25Params())
    [(_, single)] = bm25_scores([(_corpus(), np.ones(3, np.bool_))], ["cat"], BM25Params())
    assert [merged[0][1][0], merged[1][1][0]] == pytest.approx(single.tolist())


def test_unknown_terms_and_empty_masks_score_nothing() -> None:
    index = _corpus()
    [(rows, _)] = bm25_scores([(index, np.ones(3, np.bool_))], ["zebra"], BM25Params())
    assert rows.size == 0
    [(rows, _)] = bm25_scores([(index, np.zeros(3, np.bool_))], ["cat"], BM25Params())
    assert rows.size == 0


WORDS = ("cat", "dog", "bird", "fish", "owl")


@given(
    st.lists(st.lists(st.sampled_from(WORDS), max_size=6), min_size=1, max_size=8).flatmap(
        lambda docs: st.tuples(st.just(docs), st.lists(st.booleans(), min_size=len(docs), max_size=len(docs)))
    )
)
def test_document_frequencies_count_the_unmasked_documents_holding_each_term(
    corpus: tuple[list[list[str]], list[bool]],
) -> None:
    """Whether every row is unmasked (the fast path) or not, df is the count a reader would make."""
    docs, keep = corpus
    index = PostingIndex()
    for row, tokens in enumerate(docs):
        index.add(row, tokens)
    asked = [*WORDS, "zebra"]
    for mask in (np.array(keep, dtype=np.bool_), np.ones(len(docs), dtype=np.bool_)):
        expected = [sum(1 for row, d in enumerate(docs) if mask[row] and word in d) for word in asked]
        assert document_frequencies([(index, mask)], asked).tolist() == expected
    row = len(docs) - 1
    assert index.counts(row) == (
        tuple(dict.fromkeys(docs[row])),
        tuple(docs[row].count(t) for t in dict.fromkeys(docs[row])),
    )


def test_rows_must_be_appended_in_order() -> None:
    index = _corpus()
    with pytest.raises(ValueError, match="already indexed"):
        index.add(1, ["late"])


def test_analyzer_drops_stopwords_and_conflates_inflections() -> None:
    assert terms("What did they do when hiking?") == ["hik"]
    assert stem("hikes") == stem("hiked") == stem("hiking") == stem("hike")
    assert stem("studies") == stem("studying")
    assert stem("paintings") == stem("painted") == "paint"
    assert query_terms("dog dogs DOG cat") == ["dog", "cat"]
