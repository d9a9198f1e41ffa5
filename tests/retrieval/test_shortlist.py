"""A large block searched in two passes (int8 codes, then the shortlist exactly) returns what the
one-pass search returns: the same rows, the same cosines, ties by row; and the codes follow the
block through new rows, new vectors and compaction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.retrieval import quantized
from engram.processors.retrieval.ranking import vector_top
from engram.processors.retrieval.rows import SHORTLIST_FROM_ROWS, RowBlock
from engram.processors.retrieval.topk import top_indices

DIM = 64


def block_of(vectors: np.ndarray, context: tuple[float, float] = (0.0, 0.0), linked: bool = False) -> RowBlock:
    block = RowBlock(chunk_rows=4096, context=context)
    for row, vector in enumerate(vectors):
        block.append(f"n{row:06d}", 0, ["t"])
        block.set_vector(row, vector)
        if linked and row > 0:
            block.set_context(row, row - 1, -1)
            block.set_context(row - 1, int(block.prev_row[row - 1]), row)
    return block


def one_pass(block: RowBlock, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
    live = block.live() if mask is None else mask
    found = vector_top([(block, live)], query, k)
    return [(c.node_id, c.score) for c in found]


def searched(block: RowBlock, query: np.ndarray, k: int, mask: np.ndarray | None = None) -> list[tuple[str, float]]:
    """The one-pass answer (the threshold lifted) against the two-pass one."""
    saved, block.shortlist_from = block.shortlist_from, 10**12
    try:
        exact = one_pass(block, query, k, mask)
    finally:
        block.shortlist_from = saved
    fast = one_pass(block, query, k, mask)
    assert fast == exact
    return fast


@pytest.fixture(scope="module")
def vectors() -> np.ndarray:
    rng = np.random.default_rng(7)
    base = rng.standard_normal((SHORTLIST_FROM_ROWS + 500, DIM)).astype(np.float32)
    base[1000:1400] = base[10]  # duplicates: 401 rows tied with row 10
    return base


@pytest.mark.parametrize(("context", "linked"), [((0.0, 0.0), False), ((0.5, 0.25), True)])
def test_two_passes_return_the_one_pass_rows_and_cosines(
    vectors: np.ndarray, context: tuple[float, float], linked: bool
) -> None:
    block = block_of(vectors, context, linked)
    rng = np.random.default_rng(1)
    for query in [*rng.standard_normal((5, DIM)).astype(np.float32), vectors[10]]:
        found = searched(block, query / np.linalg.norm(query), 50)
        assert len(found) == 50
    assert block.codes is not None  # built at the first two-pass search


def test_ties_at_the_kth_score_keep_the_first_rows(vectors: np.ndarray) -> None:
    block = block_of(vectors)
    query = vectors[10] / np.linalg.norm(vectors[10])
    found = searched(block, query, 100)
    tied = sorted(node for node, _ in found)
    assert tied == ["n000010", *(f"n{row:06d}" for row in range(1000, 1099))]


def test_a_mask_is_applied_before_the_shortlist(vectors: np.ndarray) -> None:
    block = block_of(vectors)
    mask = block.live().copy()
    mask[::2] = False
    query = vectors[11] / np.linalg.norm(vectors[11])
    found = searched(block, query, 20, mask)
    assert all(int(node[1:]) % 2 == 1 for node, _ in found)


def test_codes_follow_new_rows_new_vectors_and_compaction(vectors: np.ndarray) -> None:
    block = block_of(vectors)
    query = vectors[3] / np.linalg.norm(vectors[3])
    searched(block, query, 10)  # builds the codes
    row = block.append("late", 0, ["t"])
    block.set_vector(row, vectors[3] * 2.0)
    block.set_vector(5, vectors[3])  # a node's vector replaced in place
    assert block.codes is not None and block.codes.shape[0] >= block.size
    found = searched(block, query, 10)
    assert {"late", "n000003", "n000005"} <= {node for node, _ in found}
    block.searchable[: SHORTLIST_FROM_ROWS // 2] = False
    smaller, _ = block.compacted()
    assert smaller.codes is not None and smaller.codes.shape[0] == smaller.size
    searched(smaller, query, 10)


def test_small_blocks_keep_no_codes() -> None:
    block = block_of(np.random.default_rng(0).standard_normal((300, DIM)).astype(np.float32))
    searched(block, np.ones(DIM, dtype=np.float32) / np.sqrt(DIM), 10)
    assert block.codes is None


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-3, 3), min_size=DIM, max_size=DIM), st.integers(0, 2**31 - 1))
def test_int8_dots_are_within_a_hundredth_of_the_cosines(query: list[float], seed: int) -> None:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((64, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    q = np.asarray(query, dtype=np.float32)
    if not np.linalg.norm(q) > 0:
        return
    q /= np.linalg.norm(q)
    codes, scales = quantized.quantize(rows)
    approx = quantized.dots(codes, scales, q)
    assert np.abs(approx - rows @ q).max() < 0.01
    assert np.array_equal(approx, quantized.dots(codes, scales, q))  # integer dot products: deterministic


def test_top_indices_breaks_ties_by_position() -> None:
    scores = np.array([0.5, 0.9, 0.5, 0.7, 0.5, 0.5])
    assert sorted(top_indices(scores, 3).tolist()) == [0, 1, 3]
    assert sorted(top_indices(scores, 4).tolist()) == [0, 1, 2, 3]
    assert sorted(top_indices(scores, 10).tolist()) == [0, 1, 2, 3, 4, 5]
