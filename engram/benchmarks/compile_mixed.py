"""The mixed step of ``engram bench compile``: requests at ``--rate`` while the same worker ingests
turns at ``--mixed-turn-rate``, dreaming on.

The turns are the scenario's principals' own (they change the memory the requests read: new
episodes, facts, and the SLB entries of those users), three minutes of event time apart per user,
in sessions of `SESSION_TURNS`, after every node the bench loaded: each finished session goes idle
in event time (ten minutes on) and is dreamt while the requests run. A background thread publishes
them at their pace from ``--mixed-lead-s`` before the first request to a second after the last; the step
reports the requests' latencies, how many turns the worker ingested and how many dreams it ran
meanwhile, and the turns' own rate.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Final

from confluent_kafka import Producer

from engram.benchmarks.compile_measure import Measured, measure, percentile
from engram.benchmarks.compile_memory import BASE_TIME_MS
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ContextRequest, ConversationTurn
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value

P99_LIMIT_MS: Final = 50.0
SESSION_TURNS: Final = 5  # short sessions: each goes idle, and is dreamt, within the step
FIRST_REQUEST: Final = 1_000_000  # the step's requests are numbered from here, after every other step's
GAP_MS: Final = 180_000  # a user's turns three minutes apart: a session is idle four turns after its last
INGESTED: Final = "engram_ingest_messages_total"


def mixed_turns(
    users: Sequence[str], count: int, texts: Sequence[str], after_ms: int, gap_ms: int = GAP_MS
) -> list[ConversationTurn]:
    """``count`` turns dealt round-robin to ``users``, each user's ``gap_ms`` of event time apart in
    sessions of `SESSION_TURNS`, the first ``gap_ms`` after ``after_ms``."""
    out: list[ConversationTurn] = []
    for i in range(count):
        user, index = users[i % len(users)], i // len(users)
        out.append(
            {
                "turn_id": f"bench-mixed-{i}",
                "user_id": user,
                "agent_id": "bench",
                "flow_id": None,
                "session_id": f"{user}-mixed-{index // SESSION_TURNS}",
                "turn_index": index % SESSION_TURNS,
                "role": "user" if index % 2 == 0 else "assistant",
                "content": texts[i % len(texts)],
                "event_time_ms": after_ms + (index + 1) * gap_ms + i % len(users),
                "layer": "USER",
                "causal_parent_ids": [],
                "tool_calls": [],
                "metadata": {},
            }
        )
    return out


@dataclass
class TurnFeed:
    """Publishes turns at ``rate`` per second in a background thread."""

    bootstrap: str
    topic: str
    turns: Sequence[ConversationTurn]
    rate: float
    sent: int = 0
    seconds: float = 0.0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def __enter__(self) -> TurnFeed:
        self._thread = threading.Thread(target=self._feed, daemon=True)
        self._thread.start()
        return self

    def _feed(self) -> None:
        codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
        producer = Producer({"bootstrap.servers": self.bootstrap, "linger.ms": 5})
        started = time.monotonic()
        for i, turn in enumerate(self.turns):
            if self._stop.is_set():
                break
            delay = started + i / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            producer.produce(self.topic, key=turn["user_id"].encode(), value=codec.encode(turn))
            producer.poll(0)
            self.sent = i + 1
        producer.flush(30)
        self.seconds = time.monotonic() - started

    def __exit__(self, kind: type[BaseException] | None, *_rest: object) -> None:
        """Every turn is sent (their number covers the requests' span), or none more after an error."""
        if kind is not None:
            self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=120)


def run_mixed(
    config: EngramConfig,
    worker: WorkerProcess,
    requests: Sequence[ContextRequest],
    rate: float,
    turns: Sequence[ConversationTurn],
    turn_rate: float,
    lead_s: float,
) -> dict[str, Any]:
    """Time ``requests`` at ``rate`` while ``turns`` are fed at ``turn_rate`` (module docstring)."""
    before = worker.scrape() or ""
    with TurnFeed(config.bootstrap_servers, config.topics.turns, turns, turn_rate) as feed:
        time.sleep(lead_s)
        measured = measure(config, [(requests, rate)])[0]
    after = worker.scrape() or ""
    return summary(measured, rate, feed, (before, after), config.topics.turns)


def summary(m: Measured, rate: float, feed: TurnFeed, scraped: tuple[str, str], turns_topic: str) -> dict[str, Any]:
    """The step's requests and what the worker ingested and dreamt meanwhile (``scraped``: its
    metrics before and after)."""

    def delta(name: str, labels: dict[str, str] | None = None) -> int:
        return int(metric_value(scraped[1], name, labels) - metric_value(scraped[0], name, labels))

    p99 = percentile(m.latencies_ms, 99)
    answered = len(m.compiled)
    return {
        "rate": rate,
        "requests": answered + m.missing,
        "missing": m.missing,
        "answered_per_s": round((answered - 1) / m.received_span_s, 1) if m.received_span_s > 0 else 0.0,
        "p50_ms": percentile(m.latencies_ms, 50),
        "p99_ms": p99,
        "compile_p50_ms": percentile(m.stage_values("total"), 50),
        "turn_rate": feed.rate,
        "turns_sent": feed.sent,
        "turns_sent_per_s": round(feed.sent / feed.seconds, 1) if feed.seconds > 0 else 0.0,
        "turns_ingested": delta(INGESTED, {"topic": turns_topic}),
        "dreams": delta("engram_dreams_total"),
        "memory_events": delta("engram_memory_events_total"),
        "goal": f"p99_ms <= {P99_LIMIT_MS} with every request answered",
        "goal_met": m.missing == 0 and p99 <= P99_LIMIT_MS,
    }


def mixed_start_ms(nodes: int) -> int:
    """Event time after every node the bench loaded (node i at ``BASE_TIME_MS + i`` s)."""
    return BASE_TIME_MS + nodes * 1000
