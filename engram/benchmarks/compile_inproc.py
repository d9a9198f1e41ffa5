"""In-process compile latency: ``ContextCompiler.compile`` over a ``MemoryView`` of ~100k nodes.

No broker, no worker: the same memory as ``engram bench compile`` (event nodes of LoCoMo turn texts
spread over ``--users`` users, NEXT-linked within sessions of 40 turns, embeddings from the default
embedder), the worker's compiler settings (BALANCED, SLB on), and ``--requests`` compiles with
LoCoMo questions, with the heap frozen after the load as the worker freezes it
(``streams.heap``). Prints one JSON object: p50/p99/mean of the compile and of each stage
(``timings_ms``), the CPU time per compile (all threads; steadier on a busy machine), the SLB hit
rate and digests of the results (item ids; ids and rounded score parts) to compare runs.
``--dump FILE`` writes each result's (id, score) list; ``--profile N`` prints the top N cProfile
entries (cumulative) on stderr.

Usage: ``.venv/bin/python -m engram.benchmarks.compile_inproc --data ../shared/benchdata/locomo``
"""

from __future__ import annotations

import argparse
import cProfile
import hashlib
import io
import json
import pstats
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engram.benchmarks.compile_measure import STAGES
from engram.benchmarks.compile_memory import make_requests, memory_events, questions
from engram.benchmarks.ingest import texts
from engram.processors.compiler.compiler import ContextCompiler
from engram.processors.compiler.config import BALANCED
from engram.processors.embedding import default_embedder
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb.config import SLB_DEFAULT
from engram.processors.slb.table import LookasideTable
from engram.processors.tokens import default_token_counter
from engram.schemas.records import CompiledContext
from engram.streams.heap import HeapFreezer


def digest(results: Sequence[CompiledContext], decimals: int | None) -> str:
    """A hash of what each compile chose and in which order (route, cache hit, item ids), with the
    score parts rounded to ``decimals`` (None: ids only)."""
    h = hashlib.sha256()
    for r in results:
        h.update(f"{r['route']}|{r['cache_hit']}|{r['total_tokens']}".encode())
        for item in r["items"]:
            h.update(item["node_id"].encode())
            if decimals is not None:
                parts = (item["score"], item["ppr"], item["decay"])
                h.update(":".join(f"{round(v, decimals)}" for v in parts).encode())
    return h.hexdigest()[:16]


def stats(values: Sequence[float]) -> dict[str, float]:
    arr = np.asarray(values, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(arr, 50)), 3),
        "p99": round(float(np.percentile(arr, 99)), 3),
        "mean": round(float(arr.mean()), 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=None)
    parser.add_argument("--nodes", type=int, default=100_000)
    parser.add_argument("--users", type=int, default=50)
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--budget", type=int, default=1000)
    parser.add_argument("--dump", type=Path, default=None, help="write each result's item ids (JSON lines)")
    parser.add_argument("--profile", type=int, default=0, help="print the top N cProfile entries")
    args = parser.parse_args()
    started = time.perf_counter()
    events = memory_events(args.nodes, args.users, texts(args.data))
    counter = default_token_counter()
    embedder = default_embedder()
    view = MemoryView(embedder=embedder, token_counter=counter)
    view.apply(events)
    HeapFreezer().note_size(len(view))  # as the worker does: the view stays out of full collections
    load_s = time.perf_counter() - started
    compiler = ContextCompiler(view, embedder, counter, BALANCED, slb=LookasideTable(SLB_DEFAULT))
    asked = questions(args.data)
    warm = make_requests(args.users, args.users, asked, 0, args.budget)
    for request in warm:
        compiler.compile(request)
    requests = make_requests(args.requests, args.users, asked, args.users, args.budget)
    profiler = cProfile.Profile() if args.profile else None
    results: list[CompiledContext] = []
    latencies: list[float] = []
    cpu: list[float] = []
    for request in requests:
        c0, t0 = time.process_time(), time.perf_counter()
        if profiler is not None:
            profiler.enable()
        results.append(compiler.compile(request))
        if profiler is not None:
            profiler.disable()
        latencies.append((time.perf_counter() - t0) * 1000.0)
        cpu.append((time.process_time() - c0) * 1000.0)
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(args.profile)
        print(out.getvalue(), file=sys.stderr)
    if args.dump is not None:
        lines = (json.dumps([[i["node_id"], i["score"]] for i in r["items"]]) for r in results)
        args.dump.write_text("\n".join(lines) + "\n", encoding="utf-8")
    report = {
        "nodes": len(view),
        "load_s": round(load_s, 1),
        "requests": len(results),
        "compile_ms": stats(latencies),
        "compile_cpu_ms": stats(cpu),
        "stages_ms": {s: stats([r["timings_ms"].get(s, 0.0) for r in results]) for s in STAGES},
        "slb_hit_rate": round(sum(r["cache_hit"] for r in results) / max(1, len(results)), 3),
        "items_mean": round(float(np.mean([len(r["items"]) for r in results])), 1),
        "digest_ids": digest(results, None),
        "digest_scores6": digest(results, 6),
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
