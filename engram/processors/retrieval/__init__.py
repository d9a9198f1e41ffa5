"""System 1 retrieval over the in-process memory view.

- ``view.MemoryView``: the event-fed ``MemoryGraph`` (blocks per owner and layer, vectors, BM25).
- ``hybrid.hybrid_search`` with ``HybridConfig`` presets ``FAST`` / ``BALANCED`` / ``THOROUGH``:
  vector + BM25 fused, reranked, with seed 002's fallback chain and safety bounds.
- ``bm25``, ``fusion``, ``rerank``, ``newer`` (same-thing candidates newest first), ``scan``,
  ``text``: the parts. Benchmark metrics live in ``benchmarks.retrieval_metrics``.
"""
