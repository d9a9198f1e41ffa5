"""Turning raw scores into ranked candidates, deterministically."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from engram.processors.retrieval.bm25 import ArchiveStatistics, BM25Params, Mask, bm25_scores
from engram.processors.retrieval.errors import VECTOR_INDEX, IndexUnavailableError
from engram.processors.retrieval.rows import RowBlock
from engram.processors.retrieval.topk import top_indices
from engram.processors.retrieval.types import Candidate

Blocks = Sequence[tuple[RowBlock, Mask]]


def ranked_candidates(scored: list[tuple[float, int, int, str]], k: int, source: str) -> list[Candidate]:
    """Best first; ties by owner (user before shared) then row (arrival order): deterministic."""
    scored.sort(key=lambda s: (-s[0], s[1], s[2]))
    return [Candidate(node_id, score, source) for score, _, _, node_id in scored[:k]]


def vector_top(blocks: Blocks, query: npt.NDArray[np.float32], k: int) -> list[Candidate]:
    """Top-k cosine over ``blocks``' masked rows (the authorized ones, chosen by the caller before
    any dot product). Raises IndexUnavailableError when there are rows to search but none has an
    embedding, or when the query's dimension is not the blocks'."""
    q = np.asarray(query, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(q))
    if norm == 0.0:
        return []
    if all(block.vectors is None for block, _ in blocks) and any(live.any() for _, live in blocks):
        raise IndexUnavailableError(VECTOR_INDEX, "no embeddings")
    scored: list[tuple[float, int, int, str]] = []
    for rank, (block, live) in enumerate(blocks):
        if block.vectors is not None and q.shape[0] != block.vectors.shape[1]:
            msg = f"query has {q.shape[0]} dimensions, the view holds {block.vectors.shape[1]}"
            raise IndexUnavailableError(VECTOR_INDEX, msg)
        rows, sims = block.similarities(q / norm, live, k)
        top = top_indices(sims, k)
        scored.extend((float(sims[i]), rank, int(rows[i]), block.node_ids[rows[i]]) for i in top)
    return ranked_candidates(scored, k, "vector")


def text_top(
    blocks: Blocks, terms: Sequence[str], k: int, params: BM25Params, archive: ArchiveStatistics | None = None
) -> list[Candidate]:
    """Top-k BM25 over ``blocks``' masked rows, with corpus statistics over those rows only (and
    ``archive``'s documents, held elsewhere)."""
    parts = [(block.text_index, live) for block, live in blocks]
    scored: list[tuple[float, int, int, str]] = []
    scores_of = bm25_scores(parts, terms, params, archive)
    for rank, ((block, _), (hit_rows, scores)) in enumerate(zip(blocks, scores_of, strict=True)):
        top = top_indices(scores, k)
        scored.extend((float(scores[i]), rank, int(hit_rows[i]), block.node_ids[hit_rows[i]]) for i in top)
    return ranked_candidates(scored, k, "bm25")
