"""A worker killed after the ingest and started again (``engram bench ingest --restart``).

Issue 50: a restart must not replay the past. After the run the bench asks ``QUESTIONS_PER_USER``
questions for a few users, round after round with the worker settled in between, until a round
answers as the one before (`fixed_point`: the first round's uses are applied and later ones are
throttled, processors/compiler/accessed.py; a question that missed the session's lookaside
buffer is a hit the next time, and a hit may answer from the buffered neighbourhood alone). Then
it kills the worker (SIGKILL: no shutdown, no final commit) and starts a new one on the same
data folder and broker. It reports, from the new process's start:

- ``serving_s``: until it serves /metrics (the view is restored before the app starts:
  streams/restore.py, from its snapshot when the killed worker left one);
- ``ready_s``: until /ready answers 200 (Faust's tables recovered as well);
- ``answered_s``: until the first question is answered;
- ``view_start_events``: the memory events the new view started with, from the snapshot and
  from the log after it (``engram_view_start_events``);
- ``contexts_equal``: how many of the questions compile to the same items (node ids and texts, in
  order) after the restart as before it, once the new worker has settled; ``contexts_differing``
  names each other one with whether its compile before and after was a lookaside-buffer hit and
  whether a bound cut it short (``partial``), and how many items the two share;
- ``state_recovered_records``: the changelog records the state tables read back before the worker
  was ready (``engram_state_recovered_records``): on disk (streams/tablestore.py) only those after
  the offset each table's store holds, in RAM (``ENGRAM_STATE_STORE=memory``) every record.

A worker not ready within `SETTLE_TIMEOUT_S` is reported (``ready_s`` None and ``error``) with
what was measured, so the ingest's own figures are not lost with it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from engram_client import ClientConfig, EngramClient

from engram.benchmarks.client_held import Held, context_items, page, settled
from engram.schemas.records import ConversationTurn
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value

USERS: Final = 3
QUESTIONS_PER_USER: Final = 2
SETTLE_TIMEOUT_S: Final = 300.0
POLL_S: Final = 0.1
FIXED_POINT_ROUNDS: Final = 4


def questions(turns: Sequence[ConversationTurn]) -> list[tuple[str, str, str]]:
    """(user, session, question) for the first `USERS` users: the texts of their first turns."""
    by_user: dict[str, list[ConversationTurn]] = {}
    for turn in turns:
        by_user.setdefault(turn["user_id"], []).append(turn)
    return [
        (user, own[i]["session_id"], own[i]["content"])
        for user, own in list(by_user.items())[:USERS]
        for i in range(min(QUESTIONS_PER_USER, len(own)))
    ]


async def _asked(config: EngramConfig, asked: Sequence[tuple[str, str, str]], prefix: str) -> list[Held]:
    async with EngramClient(ClientConfig(config.bootstrap_servers, topic_prefix=prefix)) as client:
        return [await context_items(client, question, user, session) for user, session, question in asked]


def ask(config: EngramConfig, asked: Sequence[tuple[str, str, str]], prefix: str = "") -> list[Held]:
    """The contexts of ``asked`` ((user, session, question) each), through the client SDK."""
    return asyncio.run(_asked(config, asked, prefix))


def fixed_point(config: EngramConfig, asked: Sequence[tuple[str, str, str]], user: str, prefix: str) -> list[Held]:
    """The answers of the first round of ``asked`` that answers as the round before it, the worker
    settled before each round (the last round's after `FIXED_POINT_ROUNDS`)."""
    last = ask(config, asked, prefix)
    for _ in range(FIXED_POINT_ROUNDS):
        settled(config, user, None, SETTLE_TIMEOUT_S)
        now = ask(config, asked, prefix)
        if [held.items for held in now] == [held.items for held in last]:
            break
        last = now
    settled(config, user, None, SETTLE_TIMEOUT_S)
    return now


def _until(check: Any, started: float, timeout_s: float) -> float:
    """Seconds from ``started`` until ``check()`` is true."""
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            msg = f"the restarted worker was not ready within {timeout_s:.0f} s"
            raise TimeoutError(msg)
        time.sleep(POLL_S)
    return time.perf_counter() - started


def _ready(config: EngramConfig) -> bool:
    found = page(config, "/ready")
    return bool(found and found.get("ready"))


def restart(worker: WorkerProcess, turns: Sequence[ConversationTurn], log: Path) -> dict[str, Any]:
    """Ask, kill ``worker``, start it again and ask again (see the module docstring). The new
    worker is returned stopped."""
    config, prefix = worker.config, worker.topic_prefix
    asked = questions(turns)
    user = asked[0][0]
    before = fixed_point(config, asked, user, prefix)
    worker.kill()
    started = time.perf_counter()
    restarted = WorkerProcess(config, log, topic_prefix=prefix)
    try:
        restarted.start(ready_timeout_s=SETTLE_TIMEOUT_S)
        serving_s = time.perf_counter() - started
        text = restarted.scrape() or ""
        start_events = {source: int(metric_value(text, "engram_view_start_events", {"source": source}))
                        for source in ("snapshot", "log")}  # fmt: skip
        try:
            ready_s = _until(lambda: _ready(config), started, SETTLE_TIMEOUT_S)
        except TimeoutError as exc:  # reported with what was measured, not raised over the ingest's figures
            return {"serving_s": round(serving_s, 2), "ready_s": None, "error": str(exc),
                    "view_start_events": start_events, "questions": len(asked), "contexts_equal": None}  # fmt: skip
        recovered = (
            int(metric_value(restarted.scrape() or "", "engram_state_recovered_records_total"))
            if config.state_store == "disk"
            else None  # Faust's RAM store reads every changelog record; the metric counts the disk's
        )
        ask(config, asked[:1], prefix)
        answered_s = time.perf_counter() - started
        settled(config, user, None, SETTLE_TIMEOUT_S)
        after = ask(config, asked, prefix)
    finally:
        restarted.stop()
    equal = sum(1 for b, a in zip(before, after, strict=True) if a.items == b.items)
    differing = [
        {"question": i, "cache_hit": [b.cache_hit, a.cache_hit], "partial": [b.partial, a.partial],
         "items": [len(b.items), len(a.items)], "shared_items": len(set(b.items) & set(a.items))}
        for i, (b, a) in enumerate(zip(before, after, strict=True)) if a.items != b.items
    ]  # fmt: skip
    return {
        "serving_s": round(serving_s, 2),
        "ready_s": round(ready_s, 2),
        "answered_s": round(answered_s, 2),
        "view_start_events": start_events,
        "questions": len(asked),
        "contexts_equal": equal,
        "contexts_differing": differing,
        "state_recovered_records": recovered,
    }
