"""`engram policy add TEXT --instance I [--kind policy|procedural] [--user U] [--token T] [--json]`.

Publishes a policy (or a procedure) into a layer instance as a system turn
(processors/policies.py); every worker's compiler then pins it for every request that may see it.
On a worker with an auth key the token (``--token`` or ``ENGRAM_TOKEN``) must write into the
instance (``writer_of``). Broker and topics come from the ENGRAM_* environment, like a worker's, over
the stack `engram up` left running (streams/local.py).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

from engram.streams.local import add_broker_flag, command_config


def register(sub: Any) -> None:
    policy = sub.add_parser("policy", help="publish a pinned policy or procedure for a layer instance")
    actions = policy.add_subparsers(dest="action", required=True, metavar="ACTION")
    add = actions.add_parser("add", help="add a policy (the compiler pins it for everyone who may see it)")
    add.add_argument("text")
    add.add_argument("--instance", required=True, help="system, org:ID, team:ID or user:ID")
    add.add_argument("--kind", default="policy", help="policy or procedural")
    add.add_argument("--user", default=None, help="the author (default: the token's user, else 'system')")
    add.add_argument("--token", default=os.environ.get("ENGRAM_TOKEN"), help="bearer token (or ENGRAM_TOKEN)")
    add.add_argument("--json", action="store_true")
    add_broker_flag(add)
    add.set_defaults(func=run_add)


def author_of(user: str | None, token: str | None) -> str:
    """The author: ``--user``, else the token's user (read, not verified: the worker verifies)."""
    if user:
        return user
    if token:
        from engram.processors.trust.delivery import unverified_subject

        subject = unverified_subject(token)
        if subject.startswith("user:"):
            return subject.removeprefix("user:")
    return "system"


def run_add(args: argparse.Namespace) -> int:
    from engram.processors.policies import PolicyError, policy_turn
    from engram.streams.admin import Publisher
    from engram.streams.codecs import TopicCodecs

    author = author_of(args.user, args.token)
    try:
        turn = policy_turn(args.text, args.instance, args.kind, author, int(time.time() * 1000))
    except PolicyError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    config = command_config(os.environ, args)
    publisher = Publisher.for_config(config)
    publisher.publish(config.topics.turns, author.encode(), TopicCodecs.for_config(config).turns.encode(
        {**turn, "token": args.token}))  # fmt: skip
    delivered = publisher.flush()
    if args.json:
        print(json.dumps({"turn_id": turn["turn_id"], "instance": args.instance, "delivered": delivered}))
    else:
        print(f"{args.kind} {turn['turn_id']} for {args.instance} ({delivered} delivered)")
    return 0 if delivered == 1 else 1
