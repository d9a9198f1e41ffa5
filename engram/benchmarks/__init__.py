"""Benchmarks and evaluation: everything that measures Engram, kept out of the pipeline's rooms.

- ``engram bench NAME`` (``streams.commands.bench``) imports ``benchmarks.<NAME>``; each such module
  exposes ``add_arguments(parser)`` and ``run(args) -> dict[str, object]``: ``eventlog``, ``ingest``,
  ``facts``, ``code``, ``locomo``, ``longmemeval``, ``slb``, ``compile`` (with its helpers
  ``compile_wire``, ``compile_measure``, ``compile_floor``; ``slb_memory``; ``locomo_data``).
- Scripts run with ``python -m``: ``compile_inproc`` (in-process compile latency), ``trace_builder``
  (TraceBuilder throughput), ``embedders`` (embedder comparison on LoCoMo).
- Evaluation helpers (pure): ``retrieval_metrics`` (recall, LongMemEval's official metrics, LoCoMo
  evidence ids), ``locomo_reader`` (LoCoMo JSON to ConversationTurns), ``facts_evaluation``
  (extractor precision/recall), ``code_ground_truth`` (the code graph against Python's ``ast``).
- Data: ``data/facts/utterances*.jsonl``, the labeled utterances (package data; the tests read the
  same files).

Nothing in the pipeline (``schemas``, ``processors``, ``sinks``, ``streams``) imports this package,
except the ``bench`` command, which imports it by name; nothing here reads the test tree.
"""
