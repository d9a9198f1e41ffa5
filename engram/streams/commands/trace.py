"""`engram trace back|why|concept`: navigate the Trace recorded in the event log.

Reads the ``engram.memory`` MemoryEvents archived under ``--log`` into a ``TraceIndex`` and answers:
- ``back NODE --k N``: the N turns before NODE in its session (NEXT^-1);
- ``why NODE``: NODE's causal ancestors (CAUSAL^-1), breadth first;
- ``concept CONCEPT``: the episodes that REF a concept, and its Atlas children.
NODE is a node id, or a turn id together with ``--user``. ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from engram.processors.trace.builder import event_node_id
from engram.processors.trace.navigate import TraceIndex, TraceNode
from engram.schemas.codec import CodecConfig, CodecError, make_codec
from engram.sinks.eventlog import EventLogReader, reader_keys

MEMORY_TOPIC = "engram.memory"
TEXT_WIDTH = 100


def register(sub: Any) -> None:
    parser = sub.add_parser("trace", help="backtrack, explain and browse the Trace from the event log")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    back = verbs.add_parser("back", help="the k turns before a turn, in its session")
    back.add_argument("node", metavar="EVENT_ID")
    back.add_argument("--k", type=int, default=5, help="how many turns back (default 5)")
    why = verbs.add_parser("why", help="the causal ancestors of a node")
    why.add_argument("node", metavar="EVENT_ID")
    why.add_argument("--depth", type=int, default=16, help="at most this many causal hops")
    concept = verbs.add_parser("concept", help="the episodes grounded to a concept, and its Atlas children")
    concept.add_argument("node", metavar="CONCEPT_ID")
    concept.add_argument("--with-children", action="store_true", help="include episodes of child concepts")
    for p in (back, why, concept):
        p.add_argument("--log", type=Path, required=True, help="event log root folder")
        p.add_argument("--topic", default=MEMORY_TOPIC, help=f"archived MemoryEvent topic (default {MEMORY_TOPIC})")
        p.add_argument("--user", default=None, help="read EVENT_ID as this user's turn id")
        p.add_argument("--registry-url", default=None, help="schema registry URL if values use the Confluent format")
        p.add_argument("--json", action="store_true", help="print one JSON object")
        p.set_defaults(func=handle)


def load_index(log: Path, topic: str, registry_url: str | None = None) -> tuple[TraceIndex, int]:
    """The Trace folded from the log, and how many records could not be decoded."""
    codec = make_codec("MemoryEvent", topic, CodecConfig(registry_url=registry_url))
    index = TraceIndex()
    undecodable = 0
    for record in EventLogReader(log, reader_keys(log)).read([topic]):
        value = record["value"]
        if value is None:
            undecodable += 1
            continue
        try:
            index.apply(codec.decode(value))
        except CodecError:
            undecodable += 1
    return index, undecodable


def describe(index: TraceIndex, node_id: str, **extra: object) -> dict[str, object]:
    node: TraceNode | None = index.nodes.get(node_id)
    if node is None:
        return {"node_id": node_id, "known": False, **extra}
    return {
        "node_id": node_id,
        "known": True,
        "kind": node.kind,
        "role": node.properties.get("role"),
        "session_id": node.session_id,
        "event_time_ms": node.event_time_ms,
        "text": node.text,
        "sources": [dict(s) for s in node.sources],
        **extra,
    }


def answer(index: TraceIndex, args: argparse.Namespace, node_id: str) -> dict[str, object]:
    if args.verb == "back":
        results = [describe(index, n, steps_back=i + 1) for i, n in enumerate(index.backtrack(node_id, args.k))]
        return {"verb": "back", "node": describe(index, node_id), "k": args.k, "results": results}
    if args.verb == "why":
        ancestors = index.why(node_id, max_depth=args.depth)
        results = [describe(index, a.node_id, depth=a.depth, reason=a.reason) for a in ancestors]
        return {"verb": "why", "node": describe(index, node_id), "results": results}
    episodes = index.episodes(node_id, with_children=args.with_children)
    return {
        "verb": "concept",
        "node": describe(index, node_id),
        "children": sorted(index.children.get(node_id, ())),
        "results": [describe(index, n) for n in episodes],
    }


def render(result: dict[str, Any]) -> str:
    node = result["node"]
    head = f"{result['verb']} {node['node_id']}"
    if node.get("known"):
        head += f"  [{node.get('role') or node['kind']}] {_clip(node['text'])}"
    else:
        head += "  (not in the log)"
    lines = [head]
    if result["verb"] == "concept" and result["children"]:
        lines.append(f"  children: {', '.join(result['children'])}")
    for item in result["results"]:
        mark = f"-{item['steps_back']}" if "steps_back" in item else f"d{item.get('depth', '')}"
        label = item.get("role") or item.get("kind") or "?"
        why = f" ({item['reason']})" if item.get("reason") else ""
        lines.append(f"  {mark:>4}  {item['node_id']}  [{label}]{why} {_clip(str(item.get('text', '')))}")
    if not result["results"]:
        lines.append("  (nothing found)")
    return "\n".join(lines)


def _clip(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…"


def handle(args: argparse.Namespace) -> int:
    if not args.log.is_dir():
        print(f"engram trace: no event log at {args.log}", file=sys.stderr)
        return 2
    index, undecodable = load_index(args.log, args.topic, args.registry_url)
    if undecodable:
        print(f"engram trace: skipped {undecodable} undecodable records of {args.topic}", file=sys.stderr)
    node_id = event_node_id(args.user, args.node) if args.user else args.node
    result = answer(index, args, node_id)
    result["undecodable"] = undecodable
    print(json.dumps(result, sort_keys=True) if args.json else render(result))
    return 0 if node_id in index.nodes else 1
