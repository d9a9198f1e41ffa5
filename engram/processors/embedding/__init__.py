"""Embedders. ``default_embedder()`` is the one every part of Engram uses unless configured otherwise.

- ``StaticEmbedder`` (default): static token table distilled from all-MiniLM-L6-v2, 256 dims,
  batch-invariant, ~13k turns per CPU second.
- ``MiniLMEmbedder``: the full all-MiniLM-L6-v2 encoder in numpy, 384 dims, ~12-35 turns/s.

Why the static model is the default (measured here with ``benchmarks/embedders.py`` on the five
LoCoMo conversations, 760 questions with evidence, question as query within its conversation):
evidence recall@10 is 0.450 static vs 0.291 MiniLM, at ~1,000x the speed. LoCoMo questions hinge
on names and content words, which a frequency-weighted bag of tokens keeps and a short-text
sentence encoder blurs; and only the static model leaves room for the 5,000 turns/s ingest goal.
- ``sinks.embedding_http.HttpEmbedder``: an OpenAI-compatible ``/v1/embeddings`` service (network
  I/O, so it lives in ``sinks/``).
"""

from __future__ import annotations

from engram.processors.embedding.base import Embedder, Vectors
from engram.processors.embedding.minilm import MiniLMEmbedder
from engram.processors.embedding.static import StaticEmbedder

_default: StaticEmbedder | None = None


def default_embedder() -> Embedder:
    """The process-wide StaticEmbedder (its table loads on the first ``embed``, not here)."""
    global _default
    if _default is None:
        _default = StaticEmbedder()
    return _default


__all__ = ["Embedder", "MiniLMEmbedder", "StaticEmbedder", "Vectors", "default_embedder"]
