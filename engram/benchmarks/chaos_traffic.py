"""What `engram bench chaos` publishes: turns a minute apart in event time (so sessions go idle and
dreams fire), with code changes and context requests spread evenly among them."""

from __future__ import annotations

import argparse
import threading
import time
from dataclasses import dataclass
from typing import Final

from engram.benchmarks.ingest import make_turns, texts
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CodeChange, ContextRequest, ConversationTurn
from engram.streams.admin import Publisher
from engram.streams.config import EngramConfig
from engram.streams.sample import load_sample

TURNS: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
CODE: AvroCodec[CodeChange] = AvroCodec("CodeChange")
REQUESTS: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
GAP_MS: Final = 60_000  # between turns, in event time: a user's session goes idle (10 min) and dreams fire


@dataclass(frozen=True)
class Traffic:
    """What the run publishes, in order: (topic, key, value) per message; and its counts."""

    messages: list[tuple[str, bytes, bytes]]
    turns: list[ConversationTurn]
    code: list[CodeChange]
    requests: list[ContextRequest]

    @property
    def total(self) -> int:
        return len(self.turns) + len(self.code)


def make_traffic(args: argparse.Namespace, config: EngramConfig) -> Traffic:
    """Turns, with code changes (two repos, the demo's Python files edited) and requests (from
    the turns' users, about what they said) spread evenly among them."""
    corpus = texts(args.data)
    turns = make_turns(args.turns, args.users, corpus, gap_ms=GAP_MS)
    n_code = args.turns // 10 if args.code is None else args.code
    n_requests = args.turns // 15 if args.requests is None else args.requests
    files = [c for c in load_sample().code if c["language"] == "python"]
    times = [turns[k * len(turns) // max(1, n_code)]["event_time_ms"] for k in range(n_code)]
    code = [code_change(k, files[k % len(files)], at_ms) for k, at_ms in enumerate(times)]
    asked = [turns[(k + 1) * len(turns) // (n_requests + 1)] for k in range(n_requests)]
    requests = [request(k, turn, corpus[(k * 7) % len(corpus)]) for k, turn in enumerate(asked)]
    topics = config.topics
    timed = [(t["event_time_ms"], 0, topics.turns, t["user_id"].encode(), TURNS.encode(t)) for t in turns]
    timed += [(c["event_time_ms"], 1, topics.code, c["repo"].encode(), CODE.encode(c)) for c in code]
    timed += [(r["event_time_ms"], 2, topics.requests, r["user_id"].encode(), REQUESTS.encode(r)) for r in requests]
    messages = [(topic, key, value) for _, _, topic, key, value in sorted(timed, key=lambda m: (m[0], m[1]))]
    return Traffic(messages, turns, code, requests)


def code_change(k: int, template: CodeChange, at_ms: int) -> CodeChange:
    """The ``k``-th change: one of four files of one of two repos, a demo file with a function added."""
    added = f"\n\ndef chaos_{k}():\n    return {k}\n"
    return {**template, "change_id": f"chaos-code-{k}", "repo": f"chaos-repo-{k % 2}", "path": f"pkg/m{k % 4}.py",
            "commit": f"c{k}", "content": template["content"] + added, "event_time_ms": at_ms,
            "causal_parent_ids": [], "user_id": None, "session_id": None}  # fmt: skip


def request(k: int, after: ConversationTurn, query: str) -> ContextRequest:
    """The ``k``-th request: the user of ``after`` asks in its session, just after it."""
    return {"request_id": f"chaos-request-{k}", "user_id": after["user_id"], "session_id": after["session_id"],
            "query": query, "token_budget": 400, "authorized_layers": ["USER"], "intent_hint": None,
            "agent_id": "chaos", "event_time_ms": after["event_time_ms"] + 1}  # fmt: skip


def stream(config: EngramConfig, traffic: Traffic, rate: float) -> threading.Thread:
    """Publish the traffic, all at once (``rate`` 0) or ``rate`` messages a second on a thread while
    the run goes on (so that kills land while input still streams in); returns the thread."""

    def publish() -> None:
        publisher = Publisher.for_config(config)
        started = time.monotonic()
        for n, (topic, key, value) in enumerate(traffic.messages):
            if rate > 0 and n / rate > time.monotonic() - started:
                publisher.flush()
                time.sleep(max(0.0, n / rate - (time.monotonic() - started)))
            publisher.publish(topic, key, value)
        publisher.flush()

    thread = threading.Thread(target=publish, name="chaos-inputs", daemon=True)
    thread.start()
    if rate <= 0:
        thread.join()
    return thread
