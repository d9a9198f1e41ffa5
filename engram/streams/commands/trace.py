"""`engram trace back|why|concept`: navigate the Trace recorded in the event log.

Reads the ``engram.memory`` MemoryEvents archived under ``--log`` into a ``TraceIndex`` and answers:
- ``back NODE --k N``: the N turns before NODE in its session (NEXT^-1);
- ``why NODE``: NODE's causal ancestors (CAUSAL^-1), breadth first;
- ``concept CONCEPT``: the episodes that REF a concept, and its Atlas children.
NODE is what people see: a node id, a turn's source event ``topic/partition/offset`` (a compiled
context's provenance, a dead letter's source), or a producer's turn id (the facts API's; with
``--user`` when several users have one). ``--log`` defaults to the worker's event log
(``<ENGRAM_DATA_DIR>/eventlog``). ``--json`` prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from engram.processors.trace.builder import event_node_id
from engram.processors.trace.navigate import TraceIndex, TraceNode
from engram.schemas.codec import CodecConfig, CodecError, make_codec
from engram.sinks.eventlog import EventLogReader, reader_keys
from engram.streams.local import local_config

TEXT_WIDTH = 100


def register(sub: Any) -> None:
    parser = sub.add_parser("trace", help="backtrack, explain and browse the Trace from the event log")
    verbs = parser.add_subparsers(dest="verb", required=True, metavar="VERB")
    back = verbs.add_parser("back", help="the k turns before a turn, in its session")
    back.add_argument("node", metavar="TURN", help="a turn id, TOPIC/PARTITION/OFFSET, or a node id")
    back.add_argument("--k", type=int, default=5, help="how many turns back (default 5)")
    why = verbs.add_parser("why", help="the causal ancestors of a node")
    why.add_argument("node", metavar="TURN", help="a turn id, TOPIC/PARTITION/OFFSET, or a node id")
    why.add_argument("--depth", type=int, default=16, help="at most this many causal hops")
    concept = verbs.add_parser("concept", help="the episodes grounded to a concept, and its Atlas children")
    concept.add_argument("node", metavar="CONCEPT_ID")
    concept.add_argument("--with-children", action="store_true", help="include episodes of child concepts")
    for p in (back, why, concept):
        p.add_argument("--log", type=Path, default=None, help="event log root folder (default: the worker's)")
        p.add_argument(
            "--topic", default=None, help="archived MemoryEvent topic (default: the workers', engram.memory)"
        )
        p.add_argument("--user", default=None, help="read TURN as this user's turn id")
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


def resolve(index: TraceIndex, reference: str, user: str | None) -> list[str]:
    """The nodes ``reference`` names: ``user``'s turn of that id first, else `TraceIndex.named`."""
    if user and (own := event_node_id(user, reference)) in index.nodes:
        return [own]
    return index.named(reference)


def handle(args: argparse.Namespace) -> int:
    config = local_config(os.environ)
    log = args.log or config.eventlog_dir
    if not log.is_dir():
        print(f"engram trace: no event log at {log} (give --log)", file=sys.stderr)
        return 2
    topic = args.topic or config.topics.memory
    index, undecodable = load_index(log, topic, args.registry_url or config.schema_registry_url)
    if undecodable:
        print(f"engram trace: skipped {undecodable} undecodable records of {topic}", file=sys.stderr)
    found = resolve(index, args.node, args.user)
    if len(found) > 1:
        print(f"engram trace: {args.node!r} names {len(found)} turns; pick one by node id (or give --user):",
              file=sys.stderr)  # fmt: skip
        for node_id in found:
            print(f"  {node_id}  {_clip(index.nodes[node_id].text)}", file=sys.stderr)
        return 2
    node_id = found[0] if found else (event_node_id(args.user, args.node) if args.user else args.node)
    result = answer(index, args, node_id)
    result["undecodable"] = undecodable
    print(json.dumps(result, sort_keys=True) if args.json else render(result))
    return 0 if node_id in index.nodes else 1
