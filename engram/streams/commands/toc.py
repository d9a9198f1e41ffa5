"""`engram toc`: browse a user's time hierarchy (year → month → week → day → segment), and search it.

Reads the ``engram.memory`` MemoryEvents archived under ``--log``, folds the user's episodes (the
Trace's event nodes) into a ``TocIndex`` (processors/toc) and prints the tree from ``--period``
(default: every year) down ``--depth`` levels, each period with its counts and extractive summary.
``--search QUERY`` runs the index-free agentic search instead (``--now`` anchors "last week"), and
prints each episode's node id beside its text. ``--log`` defaults to the worker's event log
(``<ENGRAM_DATA_DIR>/eventlog``). ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from engram.processors.dreaming.cluster import Idf, sentences_of
from engram.processors.toc import LEVELS, Said, TocIndex, summary, toc_search
from engram.processors.trace.emit import EVENT_KIND
from engram.schemas.changes import change_as
from engram.schemas.codec import CodecConfig, CodecError, make_codec
from engram.schemas.records import NodeUpserted
from engram.sinks.eventlog import EventLogReader, reader_keys
from engram.streams.local import local_config

TEXT_WIDTH = 110


def register(sub: Any) -> None:
    parser = sub.add_parser("toc", help="browse or search a user's time hierarchy from the event log")
    parser.add_argument("--log", type=Path, default=None, help="event log root folder (default: the worker's)")
    parser.add_argument("--user", required=True, help="whose memory")
    parser.add_argument("--period", default=None, help="start at this period key (e.g. 2023, 2023-05, 2023-05-08)")
    parser.add_argument("--depth", type=int, default=len(LEVELS), help="levels to show below the start")
    parser.add_argument("--search", default=None, metavar="QUERY", help="agentic search instead of the tree")
    parser.add_argument("--now", type=int, default=None, help="event time (ms) for time anchors; default: last turn")
    parser.add_argument(
        "--topic", default=None, help="archived MemoryEvent topic (default: the workers', engram.memory)"
    )
    parser.add_argument("--registry-url", default=None, help="schema registry URL if values use the Confluent format")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.set_defaults(func=handle)


def load(log: Path, topic: str, user: str, registry_url: str | None = None) -> tuple[TocIndex, dict[str, Said]]:
    """The user's TOC and episode texts, folded from the log (undecodable records are skipped)."""
    codec = make_codec("MemoryEvent", topic, CodecConfig(registry_url=registry_url))
    index = TocIndex(user)
    said: dict[str, Said] = {}
    for record in EventLogReader(log, reader_keys(log)).read([topic]):
        try:
            event = codec.decode(record["value"] or b"")
        except CodecError:
            continue
        node = change_as(event, NodeUpserted)
        if node is None or node["kind"] != EVENT_KIND or node["user_id"] != user or node["session_id"] is None:
            continue
        index.add(node["node_id"], node["event_time_ms"], node["session_id"])
        said[node["node_id"]] = Said(node["text"], node["event_time_ms"])
    return index, said


def tree(index: TocIndex, said: Mapping[str, Said], start: str | None, depth: int) -> list[dict[str, Any]]:
    idf = Idf.of(sentences_of((i, s.text, s.time_ms) for i, s in said.items()))

    def node(key: str, left: int) -> dict[str, Any]:
        period = index.periods[key]
        text, keywords = summary(index, key, said, idf)
        out: dict[str, Any] = {"period": key, "level": period.level, "episodes": index.count(key),
                               "sessions": len(period.sessions), "keywords": keywords, "summary": text}  # fmt: skip
        if left > 1 and period.children:
            out["children"] = [node(child, left - 1) for child in sorted(period.children)]
        return out

    roots = [start] if start is not None else index.roots()
    return [node(key, depth) for key in roots]


def handle(args: argparse.Namespace) -> int:
    config = local_config(os.environ)
    log = args.log or config.eventlog_dir
    if not log.is_dir():
        print(f"engram toc: no event log at {log} (give --log)", file=sys.stderr)
        return 2
    index, said = load(
        log, args.topic or config.topics.memory, args.user, args.registry_url or config.schema_registry_url
    )
    if args.period is not None and args.period not in index.periods:
        print(f"no period {args.period!r} in {args.user}'s memory", file=sys.stderr)
        return 2
    if args.search is not None:
        return _search(index, said, args)
    periods = tree(index, said, args.period, args.depth)
    if args.json:
        print(json.dumps({"user": args.user, "episodes": len(said), "periods": periods}, sort_keys=True))
    else:
        for period in periods:
            _print(period, 0)
    return 0


def search(index: TocIndex, said: Mapping[str, Said], query: str, now_ms: int | None = None) -> dict[str, Any]:
    """The index-free agentic search for ``query`` (``now_ms`` anchors "last week"; default: the last
    turn's time), as one JSON-ready object: the time anchor, the segments read, why it stopped, and
    each episode found with its node id, score and text."""
    now = now_ms if now_ms is not None else max((s.time_ms for s in said.values()), default=0)
    keywords = {key: set(p["keywords"]) for p in _flat(tree(index, said, None, len(LEVELS))) for key in [p["period"]]}
    result = toc_search(index, {i: s.text for i, s in said.items()}, keywords, query, now_ms=now)
    found: list[dict[str, Any]] = [
        {"node_id": n, "score": round(score, 4), "text": said[n].text} for n, score in result.episodes
    ]
    anchor = None if result.anchor is None else {"start_ms": result.anchor.start_ms, "end_ms": result.anchor.end_ms}
    return {"query": query, "anchor": anchor, "path": result.path, "stopped": result.stopped, "episodes": found}


def _search(index: TocIndex, said: Mapping[str, Said], args: argparse.Namespace) -> int:
    found = search(index, said, args.search, args.now)
    if args.json:
        print(json.dumps(found, sort_keys=True))
    else:
        print(f"anchor: {found['anchor']}  read: {len(found['path'])} segments  {found['stopped'] or ''}")
        for hit in found["episodes"]:
            print(f"  {hit['score']:.2f}  {hit['node_id']}  {hit['text'][:TEXT_WIDTH]}")
    return 0


def _flat(periods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for period in periods:
        out.append(period)
        out.extend(_flat(period.get("children", [])))
    return out


def _print(period: dict[str, Any], indent: int) -> None:
    pad = "  " * indent
    head = f"{pad}{period['period']}  ({period['episodes']} episodes, {period['sessions']} sessions)"
    print(head)
    print(f"{pad}  {period['summary'][len(period['level']) + len(period['period']) + 2 :][:TEXT_WIDTH]}")
    for child in period.get("children", []):
        _print(child, indent + 1)
