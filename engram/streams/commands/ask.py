"""`engram ask "QUERY" --user U [--session S] [--budget N] [--layers …] [--json]`.

Publishes a ContextRequest and prints the CompiledContext for it as it arrives on
engram.context.compiled. Broker and topics come from the ENGRAM_* environment, like a worker's, over
the stack `engram up` left running (streams/local.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from engram.schemas.events import stable_id
from engram.schemas.records import LAYERS, CompiledContext, ContextRequest, Layer
from engram.streams.local import add_broker_flag, command_config


def register(sub: Any) -> None:
    parser = sub.add_parser("ask", help="ask for a compiled context and print it")
    parser.add_argument("query")
    parser.add_argument("--user", required=True)
    parser.add_argument("--session", default="cli")
    parser.add_argument("--budget", type=int, default=1000, help="token budget (cl100k tokens)")
    parser.add_argument("--layers", nargs="+", choices=LAYERS, default=["USER"], help="authorized layers")
    parser.add_argument("--intent", default=None, help="explore | answer | locate | time-boxed")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the answer")
    parser.add_argument("--token", default=os.environ.get("ENGRAM_TOKEN"), help="bearer token (or ENGRAM_TOKEN)")
    parser.add_argument("--json", action="store_true")
    add_broker_flag(parser)
    parser.set_defaults(func=run)


def build_request(args: argparse.Namespace, now_ms: int) -> ContextRequest:
    layers: list[Layer] = list(args.layers)
    return {
        "request_id": stable_id("ask", args.user, args.session, args.query, now_ms),
        "user_id": args.user,
        "session_id": args.session,
        "query": args.query,
        "token_budget": args.budget,
        "authorized_layers": layers,
        "intent_hint": args.intent,
        "agent_id": "engram-cli",
        "event_time_ms": now_ms,
        "token": args.token,
    }


def run(args: argparse.Namespace) -> int:
    from engram.streams.replies import request_contexts

    config = command_config(os.environ, args)
    request = build_request(args, int(time.time() * 1000))
    answer = request_contexts(config, [request], args.timeout).get(request["request_id"])
    if answer is None:
        print(f"no compiled context within {args.timeout}s (is a worker running?)", file=sys.stderr)
        return 1
    print(json.dumps(answer, sort_keys=True) if args.json else render(answer))
    return 1 if answer.get("error_code") else 0  # refused: processors/trust/refusals.py


def render(compiled: CompiledContext) -> str:
    if compiled.get("error_code"):
        return f"refused ({compiled['error_code']}): {compiled.get('error')}"
    lines = [
        f"route {compiled['route']}: {compiled['route_reason']}",
        f"intent {compiled['intent']}, slb hit {compiled['cache_hit']}, {compiled['total_tokens']}"
        f"/{compiled['token_budget']} tokens, partial {compiled['partial']}",
    ]
    for item in compiled["items"]:
        refs = ", ".join(f"{p['topic']}/{p['partition']}/{p['offset']}" for p in item["provenance"][:3])
        lines.append(f"[{item['score']:.3f}] ({item['kind']}) {item['text']}  <- {refs}")
    return "\n".join(lines)
