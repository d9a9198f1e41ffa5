"""Code Brain: build the code graph of whole repos, then time one-file incremental changes.

``engram bench code --repo PATH [--repo PATH ...] --json`` prints files, loc, loc_per_s, entities,
edges, seconds (one batch over every supported file, reading excluded), incremental_ms (median of
one-file edits applied to the built graph, half body-only edits, half edits that add a definition
and so re-resolve dependent files) and agreement_with_ast (classes, bases, methods and imports of
the Python files against Python's own ``ast``). Progress goes to stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import pstats
import statistics
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from engram.benchmarks.code_ground_truth import compare_python
from engram.processors.code.builder import CodeGraphBuilder
from engram.processors.code.languages import is_supported
from engram.processors.tokens import TokenCounter, default_token_counter
from engram.schemas.records import CodeChange, EventRef

SKIP_DIRS = frozenset({"__pycache__", "node_modules", ".git", ".venv", "venv", ".tox", ".mypy_cache", "build", "dist"})
ENTITY_KINDS = frozenset({"code_module", "code_class", "code_function", "code_method"})


class _WordCounter:
    def count(self, text: str) -> int:
        return len(text.split())


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--repo", action="append", required=True, help="a source folder (repeatable)")
    parser.add_argument("--edits", type=int, default=8, help="one-file edits timed for incremental_ms")
    parser.add_argument("--counter", choices=("cl100k", "words"), default="cl100k", help="token counter of nodes")
    parser.add_argument("--no-agreement", action="store_true", help="skip the comparison with ast")
    parser.add_argument("--profile", action="store_true", help="print the build's top functions to stderr")
    parser.add_argument("--repeat", type=int, default=1, help="build this many times; report the fastest")


def run(args: argparse.Namespace) -> dict[str, Any]:
    counter: TokenCounter = default_token_counter() if args.counter == "cl100k" else _WordCounter()
    counter.count("warm up")  # loads the BPE tables outside the timing
    changes = _read(args.repo)
    runs: list[tuple[float, float]] = []
    for attempt in range(max(1, args.repeat)):
        print(f"building the graph of {len(changes)} files (run {attempt + 1}) ...", file=sys.stderr)
        builder = CodeGraphBuilder(counter)  # a fresh graph (and token-count cache) each run
        events, wall, cpu = _build(builder, changes, args.profile and attempt == 0)
        runs.append((wall, cpu))
    seconds, cpu_seconds = min(w for w, _c in runs), min(c for _w, c in runs)
    counts = _counts(events)
    loc = sum(_lines(change["content"]) for change, _ref in changes)
    result: dict[str, Any] = {
        "files": len(changes),
        "loc": loc,
        "seconds": round(seconds, 3),
        "seconds_runs": [round(w, 3) for w, _c in runs],
        "cpu_seconds": round(cpu_seconds, 3),  # wall time on a shared machine overstates the work
        "loc_per_s": round(loc / seconds) if seconds else None,
        "entities": sum(counts[k] for k in ENTITY_KINDS),
        "edges": counts["edges"],
        "nodes_by_kind": {k: v for k, v in sorted(counts.items()) if k.startswith("code_")},
        "edges_by_type": {k.removeprefix("edge:"): v for k, v in sorted(counts.items()) if k.startswith("edge:")},
        "memory_events": len(events),
        "counter": args.counter,
    }
    result.update(_incremental(builder, changes, args.edits))
    if not args.no_agreement:
        result.update(_agreement(changes))
    return result


def _lines(text: str) -> int:
    return text.count("\n") + (1 if text and not text.endswith("\n") else 0)


def _build(
    builder: CodeGraphBuilder, changes: list[tuple[CodeChange, EventRef]], profile: bool
) -> tuple[list[Any], float, float]:
    profiler = cProfile.Profile() if profile else None
    start, cpu_start = time.perf_counter(), time.process_time()
    if profiler is not None:
        profiler.enable()
    events = builder.apply_batch(changes)
    if profiler is not None:
        profiler.disable()
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu_start
    if profiler is not None:
        out = io.StringIO()
        pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(25)
        print(out.getvalue(), file=sys.stderr)
    return events, wall, cpu


def _read(repos: list[str]) -> list[tuple[CodeChange, EventRef]]:
    paths: list[tuple[Path, Path]] = []
    for repo in repos:
        root = Path(repo).resolve()
        for path in sorted(root.rglob("*")):
            parts = set(path.relative_to(root).parts[:-1])
            if path.is_file() and not parts & SKIP_DIRS and is_supported(path.name):
                paths.append((root, path))
    changes: list[tuple[CodeChange, EventRef]] = []
    for offset, (root, path) in enumerate(tqdm(paths, desc="reading", file=sys.stderr, unit="file")):
        text = path.read_text("utf-8", errors="replace")
        rel = path.relative_to(root.parent).as_posix()  # keep the package folder: faust/app/base.py
        changes.append((_change(rel, text, offset), {"topic": "bench.code", "partition": 0, "offset": offset}))
    return changes


def _change(path: str, text: str, offset: int) -> CodeChange:
    return {
        "change_id": f"bench-{offset}",
        "repo": "bench",
        "path": path,
        "language": "",
        "commit": "bench",
        "content": text,
        "deleted": False,
        "event_time_ms": 1_700_000_000_000 + offset,
        "layer": "ORGANIZATION",
        "causal_parent_ids": [],
        "user_id": None,
        "session_id": None,
    }


def _counts(events: list[Any]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for event in events:
        kind, record = event["change"]
        if kind == "engram.NodeUpserted":
            counts[record["kind"]] += 1
        elif kind == "engram.EdgeUpserted":
            counts["edges"] += 1
            counts[f"edge:{record['edge_type']}"] += 1
    return counts


def _incremental(builder: CodeGraphBuilder, changes: list[tuple[CodeChange, EventRef]], edits: int) -> dict[str, Any]:
    """Even edits change a function body; odd edits add a function (an interface change). Each is
    applied, timed, then reverted (the revert is timed too). CPU time of this process, in ms: wall
    time of a few ms is mostly other processes' scheduling on a shared machine."""
    python = [c for c, _r in changes if c["path"].endswith(".py") and " return " in c["content"]]
    if not python or edits <= 0:
        return {"incremental_ms": None}
    step = max(1, len(python) // edits)
    body_ms: list[float] = []
    interface_ms: list[float] = []
    wall_ms: list[float] = []
    emitted: list[int] = []
    for i, original in enumerate(tqdm(python[::step][:edits], desc="incremental", file=sys.stderr, unit="edit")):
        if i % 2 == 0:
            text = original["content"].replace(" return ", " return  ", 1)
        else:
            text = original["content"] + f"\n\ndef _bench_added_{i}() -> None:\n    print({i})\n"
        for content in (text, original["content"]):
            edit: CodeChange = {**original, "content": content, "change_id": f"edit-{i}"}
            start, wall = time.process_time(), time.perf_counter()
            events = builder.apply(edit, {"topic": "bench.code", "partition": 1, "offset": i})
            (body_ms if i % 2 == 0 else interface_ms).append((time.process_time() - start) * 1000)
            wall_ms.append((time.perf_counter() - wall) * 1000)
            emitted.append(len(events))
    every = body_ms + interface_ms
    return {
        "incremental_ms": round(statistics.median(every), 2),
        "incremental_body_ms": round(statistics.median(body_ms), 2) if body_ms else None,
        "incremental_interface_ms": round(statistics.median(interface_ms), 2) if interface_ms else None,
        "incremental_max_ms": round(max(every), 2),
        "incremental_wall_ms": round(statistics.median(wall_ms), 2),
        "incremental_events_median": statistics.median(emitted),
    }


def _agreement(changes: list[tuple[CodeChange, EventRef]]) -> dict[str, Any]:
    files = [(c["path"], c["content"]) for c, _r in changes if c["path"].endswith(".py")]
    start = time.perf_counter()
    result = compare_python(tqdm(files, desc="ast agreement", file=sys.stderr, unit="file"))
    return {
        "agreement_with_ast": round(result.ratio, 5),
        "agreement_items": result.items,
        "agreement_only_ast": len(result.only_ast),
        "agreement_only_tree_sitter": len(result.only_tree_sitter),
        "agreement_examples": {"only_ast": result.only_ast[:5], "only_tree_sitter": result.only_tree_sitter[:5]},
        "agreement_skipped_files": result.skipped[:5],
        "agreement_seconds": round(time.perf_counter() - start, 2),
    }
