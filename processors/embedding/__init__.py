"""Embedders. ``default_embedder()`` is the one every part of Engram uses unless configured otherwise.

- ``StaticEmbedder`` (default): static token table distilled from all-MiniLM-L6-v2, 256 dims,
  ~10k+ turns/s, batch-invariant; LoCoMo evidence recall@10 on par with the full model.
- ``MiniLMEmbedder``: the full all-MiniLM-L6-v2 encoder in numpy, 384 dims, ~35-45 turns/s.
- ``sinks.embedding_http.HttpEmbedder``: an OpenAI-compatible ``/v1/embeddings`` service (network
  I/O, so it lives in ``sinks/``).
"""

from __future__ import annotations

from processors.embedding.base import Embedder, Vectors
from processors.embedding.minilm import MiniLMEmbedder
from processors.embedding.static import StaticEmbedder

_default: StaticEmbedder | None = None


def default_embedder() -> Embedder:
    """The process-wide StaticEmbedder (its table loads on the first ``embed``, not here)."""
    global _default
    if _default is None:
        _default = StaticEmbedder()
    return _default


__all__ = ["Embedder", "MiniLMEmbedder", "StaticEmbedder", "Vectors", "default_embedder"]
