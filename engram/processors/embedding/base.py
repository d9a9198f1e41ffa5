"""The Embedder protocol. Implementations live beside this module.

Contract: ``embed`` returns a float32 array of shape (len(texts), dim) whose rows are L2-normalized,
so cosine similarity is a dot product. Deterministic: the same texts give the same vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np
import numpy.typing as npt

Vectors = npt.NDArray[np.float32]


@runtime_checkable
class Embedder(Protocol):
    @property
    def name(self) -> str:
        """A stable identifier of the model and its version (goes into bench output and payloads)."""
        ...

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> Vectors: ...
