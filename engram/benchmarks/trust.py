"""Trust: what authorization costs a compile, and that it lets nothing through and changes no ranking.

In process: ``--nodes`` nodes of ``--users`` users (the compile bench's many-users memory), a
`Gate` with a token key and relationship tuples (each user a member of one of five teams, each
team part of one org), and ``--requests`` requests, each with its user's bearer token. Measured in
the same run, alternating per request:
- ``compile_p50_ms`` without the gate (the request's layers believed) and ``gated_p50_ms`` with it
  (token verified, tuples resolved, then the compile); ``authorization_cost_ratio`` = gated / plain;
- ``unauthorized_items``: items outside what the principal may read (goal 0);
- ``rankings_identical``: for ``--sample`` users, the items and scores over the whole memory equal
  those over a memory that holds only that user's nodes (goal true). Cold with cold: each side is a
  fresh view and compiler built for that user's comparison, so no state left by the timed run (or
  by another user's comparison) can differ between them; only other tenants' data can.
- ``requests``: 10,000 by default (the trust goal's count; about a minute on the 2-core dev
  machine); ``--requests`` makes a quicker run.
- ``encryption_append_ratio``: event-log append time with sealing / without, same records and
  fsyncs, ``--seal-events`` ConversationTurn-sized records (benchmarks/sealing.py; goal <= 1.10).
- ``erasure_residual_items``: what is left of an erased user in the view, the graph engine, the
  user's compiled contexts and the sealed event log (benchmarks/erasure.py; goal 0), and
  ``others_unchanged``: other users' contexts are the same before and after.
"""

from __future__ import annotations

import argparse
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, Final

import numpy as np

from engram.benchmarks.compile_memory import make_requests, memory_events, questions
from engram.benchmarks.erasure import measure as measure_erasure
from engram.benchmarks.ingest import texts
from engram.benchmarks.sealing import measure as measure_sealing
from engram.processors.compiler.compiler import ContextCompiler
from engram.processors.compiler.config import BALANCED, CompilerConfig
from engram.processors.embedding import default_embedder
from engram.processors.rebac import is_visible, viewer_of
from engram.processors.retrieval.view import MemoryView
from engram.processors.tokens import default_token_counter
from engram.processors.trust.authorize import Gate
from engram.processors.trust.relations import Relationship, Relationships
from engram.processors.trust.tokens import TokenConfig, TokenVerifier, mint
from engram.schemas.records import ContextRequest, MemoryEvent


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=20_000)
    parser.add_argument("--users", type=int, default=20)
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--sample", type=int, default=4, help="users whose rankings are compared alone")
    parser.add_argument("--data", type=Path, default=None, help="LoCoMo folder for texts and questions")
    parser.add_argument("--seal-events", type=int, default=50_000, help="records appended with and without sealing")


def gate(users: Sequence[str], secret: str) -> Gate:
    relationships = Relationships()
    for i, user in enumerate(users):
        relationships.add(Relationship(f"user:{user}", "member_of", f"team:t{i % 5}"))
    for t in range(5):
        relationships.add(Relationship(f"team:t{t}", "part_of", "org:acme"))
    return Gate(TokenVerifier(TokenConfig(secret)), relationships)


# Where rankings are compared, not timed: a generous time bound.
UNTIMED: Final = replace(BALANCED, bounds=replace(BALANCED.bounds, timeout_ms=60_000.0))


def new_view() -> MemoryView:
    return MemoryView(embedder=default_embedder(), token_counter=default_token_counter())


def compile_on(view: MemoryView) -> Callable[[ContextRequest], list[tuple[str, float]]]:
    """Rankings compared before and after an erasure: under `UNTIMED`, so a loaded machine cannot cut one short."""
    compiler = ContextCompiler(view, default_embedder(), default_token_counter(), UNTIMED)
    return lambda request: ranked(compiler.compile(request))


def compiler(events: Sequence[MemoryEvent], config: CompilerConfig = BALANCED) -> tuple[ContextCompiler, MemoryView]:
    view = new_view()
    view.apply(events)
    return ContextCompiler(view, default_embedder(), default_token_counter(), config), view


def ranked(compiled: Any) -> list[tuple[str, float]]:
    return [(item["node_id"], round(float(item["score"]), 9)) for item in compiled["items"]]


def run(args: argparse.Namespace) -> dict[str, object]:
    corpus = texts(args.data)
    events = memory_events(args.nodes, args.users, corpus)
    requests = make_requests(args.requests, args.users, questions(args.data), args.users, 600)
    users = sorted({r["user_id"] for r in requests})
    secret = secrets.token_hex(32)
    the_gate, now = gate(users, secret), int(time.time())
    tokens = {u: mint(TokenConfig(secret), f"user:{u}", now + 3600) for u in users}
    whole, view = compiler(events)
    plain_ms, gated_ms, leaked = [], [], 0

    def plain(request: ContextRequest) -> None:
        started = time.perf_counter()
        whole.compile(request)
        plain_ms.append((time.perf_counter() - started) * 1000.0)

    def gated(request: ContextRequest) -> int:
        started = time.perf_counter()
        access = the_gate.access(request["user_id"], tokens[request["user_id"]], request["authorized_layers"], now)
        instances = sorted(access.instances or ())
        compiled = whole.compile({**request, "authorized_layers": sorted(access.layers), "instances": instances})
        gated_ms.append((time.perf_counter() - started) * 1000.0)
        records = [view.node(item["node_id"]) for item in compiled["items"]]
        viewer = viewer_of(request["user_id"], access.instances)
        return sum(r is None or not is_visible(r.layer, r.user_id, r.instance, viewer, access.layers) for r in records)

    for i, request in enumerate(requests):  # alternating which goes first, so neither gets the warmer caches
        if i % 2:
            leaked += gated(request)
            plain(request)
        else:
            plain(request)
            leaked += gated(request)
    sample = users[: args.sample]
    identical = all(same_alone(events, [r for r in requests if r["user_id"] == u][:5], u) for u in sample)
    plain_p50, gated_p50 = float(np.median(plain_ms)), float(np.median(gated_ms))
    ratio = gated_p50 / plain_p50 if plain_p50 else float("inf")
    return {
        "requests": len(requests), "nodes": args.nodes, "users": len(users), "unauthorized_items": leaked,
        "rankings_identical": identical, "compile_p50_ms": round(plain_p50, 3), "gated_p50_ms": round(gated_p50, 3),
        "authorization_cost_ratio": round(ratio, 4),
        "goals_met_authorization": leaked == 0 and identical and ratio <= 1.10,
        **measure_erasure(events, new_view, compile_on, {u: [r for r in requests if r["user_id"] == u][:3]
                                                         for u in sample}),
        **measure_sealing(args.seal_events),
    }  # fmt: skip


def same_alone(events: Sequence[MemoryEvent], asked: Sequence[ContextRequest], user: str) -> bool:
    """The user's compiles over the whole memory equal those over the user's nodes alone, both
    compilers cold (built here, nothing compiled before). What is compared is the ranking, not the
    time: both are `UNTIMED`, so a loaded machine cannot cut one short."""
    whole = compiler(events, UNTIMED)[0]
    alone = compiler([e for e in events if e["key"] == user], UNTIMED)[0]
    return all(ranked(whole.compile(r)) == ranked(alone.compile(r)) for r in asked)
