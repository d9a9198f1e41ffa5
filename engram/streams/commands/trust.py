"""`engram token SUBJECT [--ttl S]`, `engram relate SUBJECT RELATION OBJECT [--remove]` and
`engram forget --user U [--reason R] [--token T]`.

`token` mints a bearer token for a principal (``user:ada``, ``service:ingest``) with the worker's
key (``ENGRAM_AUTH_KEY``; for RS256/ES256 pass the private key with ``--key-file``): for operators
and development. Production tokens come from the identity provider whose public key the workers hold.

`relate` publishes a `RelationshipChanged` on engram.relationships (keyed by the tuple, so the
compacted topic keeps each tuple's last change), after checking it as a worker will. Broker, topics
and keys come from the ENGRAM_* environment, like a worker's, over the stack `engram up` left running
(streams/local.py), as for `forget`.

`forget` publishes an `ErasureRequested` on engram.erasures (keyed by the user): the workers remove
the user's content from every projection and delete the user's event-log key
(streams/agents/erasure.py). On a worker with an auth key the token (``--token`` or
``ENGRAM_TOKEN``) must be the user's own, or a principal's with ``writer_of user:U``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from engram.processors.trust.relations import RELATIONS, Relationship
from engram.streams.local import add_broker_flag, command_config


def register(sub: Any) -> None:
    token = sub.add_parser("token", help="mint a bearer token for a principal (development, operators)")
    token.add_argument("subject", help="user:ID or service:ID")
    token.add_argument("--ttl", type=int, default=3600, help="seconds until it expires")
    token.add_argument("--key-file", type=Path, default=None, help="signing key (PEM) for RS256/ES256")
    token.set_defaults(func=run_token)
    relate = sub.add_parser("relate", help="add (or --remove) a relationship tuple")
    relate.add_argument("subject", help="user:ID, service:ID, team:ID or org:ID")
    relate.add_argument("relation", choices=sorted(RELATIONS))
    relate.add_argument("object", help="team:ID, org:ID, user:ID or system")
    relate.add_argument("--remove", action="store_true")
    relate.add_argument("--reason", default="")
    add_broker_flag(relate)
    relate.set_defaults(func=run_relate)
    forget = sub.add_parser("forget", help="erase a user's content from every store and the event log")
    forget.add_argument("--user", required=True, help="the user id to erase")
    forget.add_argument("--reason", default="", help="why (kept with the request)")
    forget.add_argument("--token", default=os.environ.get("ENGRAM_TOKEN"), help="bearer token (or ENGRAM_TOKEN)")
    forget.add_argument("--json", action="store_true", help="print the request as JSON")
    add_broker_flag(forget)
    forget.set_defaults(func=run_forget)


def run_token(args: argparse.Namespace) -> int:
    from engram.processors.trust.tokens import TokenError, check_principal, mint
    from engram.streams.config import EngramConfig

    try:  # a worker refuses any other subject, so no such token is minted
        check_principal(args.subject)
    except TokenError:
        hint = "a subject is user:ID or service:ID, an ID of a-z 0-9 . _ @ - (e.g. user:maya)"
        print(f"cannot mint a token for {args.subject!r}: {hint}", file=sys.stderr)
        return 2
    tokens = EngramConfig.from_env(os.environ).tokens
    if tokens is None:
        print("ENGRAM_AUTH_KEY is not set: workers accept no tokens", file=sys.stderr)
        return 2
    if args.key_file is not None:
        tokens = replace(tokens, key=args.key_file.read_text(encoding="utf-8"))
    try:
        print(mint(tokens, args.subject, int(time.time()) + args.ttl))
    except ValueError as exc:
        print(f"cannot mint a token: {exc}", file=sys.stderr)
        return 2
    return 0


def run_relate(args: argparse.Namespace) -> int:
    from engram.schemas.records import RelationshipChanged
    from engram.streams.admin import Publisher
    from engram.streams.codecs import TopicCodecs

    tuple_ = Relationship(args.subject, args.relation, args.object)
    try:
        tuple_.check()
    except ValueError as exc:
        print(f"refused: {exc}", file=sys.stderr)
        return 2
    config = command_config(os.environ, args)
    change: RelationshipChanged = {
        "subject": tuple_.subject, "relation": tuple_.relation, "object": tuple_.object, "present": not args.remove,
        "actor": os.environ.get("USER") or None, "reason": args.reason, "event_time_ms": int(time.time() * 1000),
    }  # fmt: skip
    publisher = Publisher.for_config(config)
    key = f"{tuple_.subject}|{tuple_.relation}|{tuple_.object}".encode()
    publisher.publish(config.topics.relationships, key, TopicCodecs.for_config(config).relationships.encode(change))
    delivered = publisher.flush()
    verb = "removed" if args.remove else "added"
    print(f"{verb}: {tuple_.subject} {tuple_.relation} {tuple_.object} ({delivered} delivered)")
    return 0 if delivered == 1 else 1


def run_forget(args: argparse.Namespace) -> int:
    import json

    from engram.schemas.records import ErasureRequested
    from engram.streams.admin import Publisher
    from engram.streams.codecs import TopicCodecs

    if not args.user.strip():
        print("refused: --user is empty", file=sys.stderr)
        return 2
    config = command_config(os.environ, args)
    request: ErasureRequested = {
        "user_id": args.user, "reason": args.reason, "requested_by": os.environ.get("USER") or None,
        "event_time_ms": int(time.time() * 1000), "token": args.token,
    }  # fmt: skip
    publisher = Publisher.for_config(config)
    publisher.publish(
        config.topics.erasures, args.user.encode(), TopicCodecs.for_config(config).erasures.encode(request)
    )
    delivered = publisher.flush()
    if args.json:
        print(json.dumps({"user_id": args.user, "topic": config.topics.erasures, "delivered": delivered}))
    else:
        print(f"erasure of {args.user} requested on {config.topics.erasures} ({delivered} delivered)")
    return 0 if delivered == 1 else 1
