"""The offline embedders: shapes, norms, determinism, batch invariance, and MiniLM fidelity."""

from __future__ import annotations

import numpy as np
import pytest

from engram.processors.embedding import Embedder, MiniLMEmbedder, StaticEmbedder, default_embedder
from engram.processors.tokens import BpeTokenCounter, default_token_counter

SENTENCES = [
    "A man is eating food.",
    "A man is eating a piece of bread.",
    "The girl is carrying a baby.",
    "Caroline went to the LGBTQ support group on Sunday.",
]


def test_default_embedder_is_the_static_model() -> None:
    embedder = default_embedder()
    assert isinstance(embedder, StaticEmbedder)
    assert isinstance(embedder, Embedder)
    assert embedder is default_embedder()
    assert embedder.dim == 256
    assert embedder.name.startswith("static-minilm-l6-v2")


def test_static_vectors_are_unit_float32_and_rank_paraphrases_first() -> None:
    vectors = StaticEmbedder().embed(SENTENCES)
    assert vectors.dtype == np.float32 and vectors.shape == (4, 256)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    sims = vectors @ vectors.T
    assert sims[0, 1] > sims[0, 2] and sims[0, 1] > sims[0, 3]


def test_static_rows_do_not_depend_on_the_batch() -> None:
    embedder = StaticEmbedder()
    texts = SENTENCES * 5 + ["", "   ", "x" * 3000]
    whole = embedder.embed(texts)
    pieces = np.concatenate([embedder.embed(texts[i : i + 3]) for i in range(0, len(texts), 3)])
    assert np.array_equal(whole, pieces)
    alone = np.concatenate([embedder.embed([text]) for text in texts])  # one text: the query fast path
    assert np.array_equal(whole, alone)
    assert not whole[-3].any() and not whole[-2].any()  # no tokens: the zero vector
    assert embedder.embed([]).shape == (0, 256)


@pytest.fixture(scope="module")
def minilm() -> MiniLMEmbedder:
    return MiniLMEmbedder()


def test_minilm_matches_sentence_transformers(minilm: MiniLMEmbedder) -> None:
    vectors = minilm.embed(["hello world", *SENTENCES[:2]])
    assert vectors.shape == (3, 384)
    # Reference values from sentence-transformers' all-MiniLM-L6-v2 for "hello world".
    reference = np.array([-0.03447727, 0.03102317, 0.00673496, 0.02610895, -0.03936203], dtype=np.float32)
    assert np.allclose(vectors[0, :5], reference, atol=2e-6)
    assert float(vectors[1] @ vectors[2]) == pytest.approx(0.7553, abs=1e-3)  # the library's README example


def test_minilm_padding_does_not_change_a_row(minilm: MiniLMEmbedder) -> None:
    alone = minilm.embed([SENTENCES[3]])
    padded = minilm.embed([SENTENCES[3], "a much longer neighbour " * 30])
    assert float(alone[0] @ padded[0]) == pytest.approx(1.0, abs=1e-5)


def test_token_counts_are_cl100k() -> None:
    counter = default_token_counter()
    assert isinstance(counter, BpeTokenCounter)
    assert counter.count("hello world") == 2
    assert counter.count("") == 0
    assert counter.count("<|endoftext|>") > 1  # special-token text counts as ordinary text
    assert counter.count_batch(["hello world", "", "tiktoken is great!"]) == [2, 0, 6]
