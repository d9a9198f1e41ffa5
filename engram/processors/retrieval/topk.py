"""The k best of a score array, ties at the k-th score broken by position (the lowest first).

``np.argpartition`` alone returns *some* k best: among the rows tied with the k-th score it keeps
whichever its partitioning leaves in front, which changes with the array's length and layout. The
rankings promise ties by row (arrival order), and a search that scores a block in two passes
(rows.RowBlock) must return what the one-pass search returns, so the tied rows kept are the first.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt


def top_indices(scores: npt.NDArray[np.floating], k: int) -> npt.NDArray[np.intp]:
    """Indices of the k best scores (unordered), the lowest indices among those tied with the k-th."""
    if k <= 0 or scores.shape[0] == 0:
        return np.empty(0, dtype=np.intp)
    if scores.shape[0] <= k:
        return np.arange(scores.shape[0])
    kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
    above = np.flatnonzero(scores > kth)
    tied = np.flatnonzero(scores == kth)[: k - above.shape[0]]
    return np.concatenate([above, tied])
