"""`engram query TYPE [--param NAME=VALUE …] --user U [--layers …] [--apply] [--json]`.

Asks a running worker's graph engine one of seed 004's queries (processors/graph/engine.py) over
the broker, the way `engram ask` asks for a context, and prints the typed result, each node id with
the start of its text. A parameter's
value is read as JSON when it parses (numbers, booleans, lists) and as a string otherwise.
Broker and topics come from the ENGRAM_* environment, like a worker's, over the stack `engram up`
left running (streams/local.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Mapping
from typing import Any, Final

from engram.processors.graph.types import QUERY_TYPES
from engram.schemas.events import stable_id
from engram.schemas.records import LAYERS, GraphAnswer, GraphRequest, Layer
from engram.streams.local import add_broker_flag, command_config

PARAMETERS: Final = """parameters by query type (node ids are memory node ids; types are fact, decision, inference,
correction, skill, episode; edge types CAUSED_BY, SUPPORTS, CONTRADICTS, SUPERSEDES, RELATED_TO, PART_OF,
TEMPORAL_NEXT):
  traversal    node, edge_types, direction (out|in|both), max_depth, limit
  pattern      types, sessions, min_confidence, max_confidence, start_ms, end_ms, limit, oldest_first
  temporal     start_ms, end_ms, types, limit
  similarity   text or vector, limit, min_score, types
  resolve      node                        (follows SUPERSEDES to the current version)
  bm25         text, limit, types, scan    (scan: the checked slow path, no index)
  hybrid       text, vector, limit, types  (BM25 + vector, reciprocal rank fusion, k = 60)
  pagerank     limit, types, alpha
  degree       limit, types, direction (in|out|both)
  betweenness  limit, types, samples
  bfs          source, target, max_depth   (bidirectional, depth <= 20)
  dijkstra     source, target
  revise       node or text                (what falls if this is false)
  gaps         confidence_threshold, stale_days, now_ms, limit
  analogy      node, limit
  consolidate  threshold, limit            (a dry run unless --apply)
  drift        topic, min_relevance, limit"""


def register(sub: Any) -> None:
    parser = sub.add_parser(
        "query",
        help="ask a worker's graph engine one of seed 004's queries",
        epilog=PARAMETERS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("query_type", choices=QUERY_TYPES, metavar="TYPE", help=", ".join(QUERY_TYPES))
    parser.add_argument("--user", required=True)
    parser.add_argument("--param", action="append", default=[], metavar="NAME=VALUE", help="a query parameter")
    parser.add_argument("--layers", nargs="+", choices=LAYERS, default=["USER"], help="authorized layers")
    parser.add_argument("--apply", action="store_true", help="carry a consolidation out (MemoryEvents)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the answer")
    parser.add_argument("--token", default=os.environ.get("ENGRAM_TOKEN"), help="bearer token (or ENGRAM_TOKEN)")
    parser.add_argument("--json", action="store_true")
    add_broker_flag(parser)
    parser.set_defaults(func=run)


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``NAME=VALUE`` pairs; a value is JSON when it parses, a string otherwise."""
    out: dict[str, Any] = {}
    for pair in pairs:
        name, sep, raw = pair.partition("=")
        if not sep or not name:
            msg = f"--param {pair!r} is not NAME=VALUE"
            raise ValueError(msg)
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def build_request(args: argparse.Namespace, now_ms: int) -> GraphRequest:
    return graph_request(args.user, args.query_type, parse_params(args.param), list(args.layers), args.token, now_ms,
                         apply=args.apply)  # fmt: skip


def graph_request(
    user: str, query_type: str, params: Mapping[str, Any], layers: list[Layer], token: str | None, now_ms: int,
    *, apply: bool = False, agent_id: str = "engram-cli",
) -> GraphRequest:  # fmt: skip
    """One GraphRequest; its id derives from what it asks and when (``now_ms``)."""
    encoded = json.dumps(dict(params), sort_keys=True)
    return {
        "query_id": stable_id("query", user, query_type, encoded, now_ms),
        "user_id": user,
        "authorized_layers": layers,
        "query_type": query_type,
        "params_json": encoded,
        "apply": apply,
        "agent_id": agent_id,
        "event_time_ms": now_ms,
        "token": token,
    }


def run(args: argparse.Namespace) -> int:
    from engram.streams.replies import graph_answers

    try:
        request = build_request(args, int(time.time() * 1000))
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 2
    config = command_config(os.environ, args)
    answer = graph_answers(config, [request], args.timeout).get(request["query_id"])
    if answer is None:
        print(f"no answer within {args.timeout}s (is a worker running?)", file=sys.stderr)
        return 1
    if args.json:
        print(json.dumps({**answer, "result": json.loads(answer["result_json"])}, sort_keys=True))
    else:
        print(render(answer))
    return 0 if answer["ok"] else 1


def render(answer: GraphAnswer) -> str:
    """A readable answer: a header, then each field of the result, lists one item per line, each
    node id with the start of its text (``node_texts``)."""
    header = f"{answer['query_type']} over {answer['nodes']} visible nodes in {answer['elapsed_ms']:.1f} ms"
    if not answer["ok"]:
        return f"{header}: error: {answer['error']}"
    if answer["events"]:
        header += f", {answer['events']} memory events written"
    texts = answer.get("node_texts") or {}
    lines = [header]
    for name, value in json.loads(answer["result_json"]).items():
        if isinstance(value, list):
            lines.append(f"{name} ({len(value)}):")
            lines.extend(f"  {_item(item, texts)}" for item in value)
        else:
            lines.append(f"{name}: {_item(value, texts)}")
    return "\n".join(lines)


def _item(value: Any, texts: Mapping[str, str]) -> str:
    if isinstance(value, dict):
        pairs = "  ".join(f"{k}={_item(v, {})}" for k, v in value.items() if not isinstance(v, list) or v)
        named = [texts[v] for v in value.values() if isinstance(v, str) and v in texts]
        return pairs + "".join(f'  "{text}"' for text in named)
    if isinstance(value, str) and value in texts:
        return f'{value}  "{texts[value]}"'
    if isinstance(value, float):
        return f"{value:.4g}"
    return str(value)
