"""Int8 codes of a block's unit vectors, for a first pass over a large block at a quarter of the bytes.

A brute-force search reads every row of the block: 1,536 bytes a row as float32, so 153 MB per
query over 100,000 nodes, which memory bandwidth bounds at about 8 ms on this machine whatever the
arithmetic (numpy's float32 matvec and a float16 or int8 matrix in numpy are no faster). The codes
keep each row as int8 with its own scale (``row ≈ code · scale``, the largest component mapped to
±127), and `dots` scores all of them with SimSIMD's int8 kernels (VNNI/AVX-512 where the CPU has
them, one thread): about 2 ms for those 100,000 rows. The scores are approximate (about 1e-3 off);
a caller ranks with them only to pick a shortlist, then scores the shortlist exactly
(`rows.RowBlock.similarities`). Integer dot products are exact, so the pass is deterministic.
"""

from __future__ import annotations

from typing import Final

import numpy as np
import numpy.typing as npt
import simsimd

Codes = npt.NDArray[np.int8]
Scales = npt.NDArray[np.float32]
LEVELS: Final = 127.0


def quantize(rows: npt.NDArray[np.float32]) -> tuple[Codes, Scales]:
    """Int8 codes and per-row scales of ``rows`` (a zero row gets zero codes and scale 0)."""
    peak = np.abs(rows).max(axis=1) if rows.shape[0] else np.zeros(0, dtype=np.float32)
    scales = (peak / LEVELS).astype(np.float32)
    safe = np.where(scales > 0, scales, 1.0).astype(np.float32)
    codes = np.clip(np.rint(rows / safe[:, None]), -LEVELS, LEVELS).astype(np.int8)
    return codes, scales


def dots(codes: Codes, scales: Scales, query: npt.NDArray[np.float32]) -> npt.NDArray[np.float32]:
    """Approximate dot products of ``query`` with the rows the codes stand for."""
    if codes.shape[0] == 0:
        return np.zeros(0, dtype=np.float32)
    query_codes, query_scale = quantize(np.asarray(query, dtype=np.float32).reshape(1, -1))
    raw = np.asarray(simsimd.cdist(query_codes, codes, metric="dot", threads=1), dtype=np.float32).reshape(-1)
    return np.asarray(raw * scales * query_scale[0], dtype=np.float32)
