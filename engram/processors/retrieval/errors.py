"""Typed errors of retrieval. An unavailable index is not a failure of the request: the hybrid
search catches ``IndexUnavailableError`` and falls back along the chain (seed 002)."""

from __future__ import annotations

from typing import Final

VECTOR_INDEX: Final = "vector"
TEXT_INDEX: Final = "bm25"


class RetrievalError(Exception):
    """Base of retrieval errors."""


class IndexUnavailableError(RetrievalError):
    """An accelerator (vector or text index) cannot answer; ``index`` names it for the fallback log."""

    def __init__(self, index: str, reason: str) -> None:
        super().__init__(f"{index} index unavailable: {reason}")
        self.index = index
        self.reason = reason
