"""The client SDK on the stand-in stack: asks, codec modes, refusals, and down/up keeping memory.

One run, on a stack started as ``engram up`` starts it (it keeps its data) and a worker with a
token key (issue 48):

- ``single_object_ok``: Ada's turns, published through the SDK in single-object encoding, come
  back in a context she asks for. ``registry_mode_ok``: the same with a second worker and the SDK
  in registry mode, through the schema registry stand-in (infra/schema_registry.py).
- ``ask_p50_ms`` / ``ask_p99_ms``: `EngramClient.ask` from call to return (perf counter), over
  ``--asks`` sequential asks cycling through `QUESTIONS` after `WARM_ASKS` unmeasured ones;
  ``compile_p50_ms``: the same answers' ``timings_ms.total`` (the worker's compile), so
  ``ask_minus_compile_p50_ms`` is what the SDK, the broker and the worker's request hop add
  (goal: at most 10).
- ``refusal_reply_ms``: the median time for `ask` to raise `EngramAuthorizationError` when Ada's
  token asks for Bob's memory (``--refusals`` tries; goal under 1,000).
- ``restart_kept``: the worker and the stack are stopped (``engram down``) and started again
  (``engram up``, a new worker on the same data folder): Ada's ``/facts``, the view's counts and
  applied offsets (``/view``), the graph's node count and a compiled context's items are the same
  before and after (`benchmarks.client_held`). ``restart_slb_hit``: the first ask after the restart
  is an SLB hit (the session's buffer came back). ``stack_up_empty_s``, ``stack_down_s``,
  ``stack_up_restored_s``: the wall time of ``engram up`` on an empty root, ``engram down`` and
  ``engram up`` again, each run as a user runs it (its own process, the interpreter's start
  included); ``snapshot_save_s`` / ``snapshot_restore_s``: the broker snapshot's share of them.
"""

from __future__ import annotations

import argparse
import asyncio
import secrets
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any, Final

from engram_client import ClientConfig, EngramAuthorizationError, EngramClient

from engram.benchmarks.client_held import Held, KeptStack, after_start, before_stop, context_items
from engram.infra.config import StackInfo
from engram.infra.schema_registry import schema_registry
from engram.processors.trust.tokens import TokenConfig, mint
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.demo import free_port
from engram.streams.runner import WorkerProcess

KEY: Final = secrets.token_hex(32)  # the workers' token key, new in every process
USER: Final = "ada"
SESSION: Final = "bench"
TURNS: Final = (
    "I moved to Berlin last spring.",
    "I work as a nurse at the city hospital.",
    "My sister Dana lives in Munich.",
    "I love hiking in the Alps on weekends.",
    "I'm allergic to peanuts.",
    "My favourite food is ramen.",
    "I'm training for the Berlin marathon in September.",
    "I play the cello in a community orchestra.",
)
QUESTIONS: Final = (
    "Where do I live?",
    "What do I do for work?",
    "Where does my sister live?",
    "What do I like to do on weekends?",
    "What am I allergic to?",
    "What is my favourite food?",
    "What am I training for?",
    "Which instrument do I play?",
)
WARM_ASKS: Final = len(QUESTIONS)
KEPT_QUESTION: Final = "Where does my sister live?"
TIMEOUT_S: Final = 120.0


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--asks", type=int, default=300, help="measured asks (default 300)")
    parser.add_argument("--refusals", type=int, default=20, help="refused asks timed (default 20)")
    parser.add_argument("--partitions", type=int, default=2)


def run(args: argparse.Namespace) -> dict[str, Any]:
    started = time.monotonic()
    phases = Phases()
    with tempfile.TemporaryDirectory(prefix="engram-bench-client-") as tmp:
        folder = Path(tmp)
        stack = KeptStack(folder / "stack")
        info = stack.up()
        up_empty_s = stack.up_s
        try:
            config = worker_config(info, folder, "bench", args.partitions)
            ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
            worker = WorkerProcess(config, folder / "worker.log", topic_prefix="bench")
            with phases("worker_start"):
                worker.start()
            try:
                measured = asyncio.run(single_object(config, "bench", args, phases))
                with phases("held_before"):
                    before = before_stop(config, USER, token(), partial(asked, config, "bench"), TIMEOUT_S)
            finally:
                worker.stop()
            with phases("down_up"):
                stack.down()
                saved, down_s = stack.saved, stack.down_s
                info = stack.up()
            config = replace(config, bootstrap_servers=info.require_bootstrap_servers(),
                             falkordb_port=info.require_falkordb()[1])  # fmt: skip
            with phases("held_after"), WorkerProcess(config, folder / "worker-again.log", topic_prefix="bench"):
                after = after_start(config, USER, token(), partial(asked, config, "bench"), TIMEOUT_S)
            with phases("registry_mode"):
                registry_ok = registry_mode(info, folder, args.partitions)
        finally:
            if stack.info is not None:
                stack.down(save=False)
    kept = after.differences(before)
    return {
        **measured,
        "registry_mode_ok": registry_ok,
        "restart_kept": not kept and bool(before.facts) and bool(before.items),
        "restart_lost": kept,
        "restart_slb_hit": after.cache_hit,
        "kept_facts": len(before.facts),
        "kept_items": len(before.items),
        "kept_graph_nodes": before.graph_nodes,
        "stack_up_empty_s": round(up_empty_s, 3),
        "stack_down_s": round(down_s, 3),
        "stack_up_restored_s": round(stack.up_s, 3),
        "snapshot_save_s": 0 if saved is None else saved["seconds"],
        "snapshot_restore_s": 0 if stack.restored is None else stack.restored["seconds"],
        "snapshot_records": 0 if saved is None else saved["records"],
        "snapshot_bytes": 0 if saved is None else saved["bytes"],
        "phase_s": phases.seconds,
        "wall_s": round(time.monotonic() - started, 1),
    }


class Phases:
    """Wall seconds per named phase of the run, each announced on stderr as it starts."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        print(f"[bench client] {name}", file=sys.stderr, flush=True)
        began = time.monotonic()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0) + time.monotonic() - began, 2)


def token(user: str = USER) -> str:
    return mint(TokenConfig(KEY), f"user:{user}", int(time.time()) + 3600)


def worker_config(info: StackInfo, folder: Path, prefix: str, partitions: int, **overrides: Any) -> EngramConfig:
    host, port = info.require_falkordb()
    config = EngramConfig(
        bootstrap_servers=info.require_bootstrap_servers(),
        falkordb_host=host,
        falkordb_port=port,
        app_id=f"engram-bench-client-{prefix}",
        topics=EngramConfig().topics.prefixed(prefix),
        graph_name=prefix.replace("-", "_"),
        partitions=partitions,
        data_dir=folder / prefix,
        web_port=free_port(),
        broker_profile="standin",
        auth_key=KEY,
    )
    return replace(config, **overrides)


def client_config(config: EngramConfig, prefix: str) -> ClientConfig:
    return ClientConfig(config.bootstrap_servers, token(), prefix, schema_registry_url=config.schema_registry_url)


@dataclass(frozen=True)
class Recall:
    """Whether a context came to hold the last turn published, after how many asks, and the last
    answer (what a failure shows: its items, whether the SLB served it, its fallbacks)."""

    ok: bool
    asks: int
    last: dict[str, Any] | None

    def summary(self) -> str:
        if self.last is None:
            return f"no answer in {self.asks} asks"
        texts = [item["text"] for item in self.last["items"]]
        return (
            f"after {self.asks} asks the last context held {texts}, cache_hit {self.last['cache_hit']}, "
            f"fallbacks {self.last['fallbacks']}, timings_ms {self.last['timings_ms']}"
        )


async def remembered(client: EngramClient, turns: tuple[str, ...], timeout_s: float = TIMEOUT_S) -> Recall:
    """Publish ``turns`` as Ada's and ask until a context holds the last one. Each ask comes from a
    session of its own: the question is what the worker holds, and an ask answered from a lookaside
    buffer filled before the last turn was applied would repeat that older neighbourhood until the
    buffer's epoch ends (seen once in a full CI run under load: 230 asks, every one a hit)."""
    for index, text in enumerate(turns):
        await client.publish_turn(user_id=USER, session_id=SESSION, turn_index=index, content=text)
    deadline = time.monotonic() + timeout_s
    asks, answer = 0, None
    while time.monotonic() < deadline:
        answer = await client.ask(QUESTIONS[0], user_id=USER, session_id=f"recall-{asks}", timeout_s=30)
        asks += 1
        if turns[-1] in [item["text"] for item in answer["items"]]:
            return Recall(True, asks, answer)
        await asyncio.sleep(0.5)
    return Recall(False, asks, answer)


async def single_object(config: EngramConfig, prefix: str, args: argparse.Namespace, phases: Phases) -> dict[str, Any]:
    """Turns in, asks timed against their compile time, refusals timed."""
    async with EngramClient(client_config(config, prefix)) as client:
        with phases("remembered"):
            ok = (await remembered(client, TURNS)).ok
        asks: list[float] = []
        compiles: list[float] = []
        with phases("asks"):
            for question in QUESTIONS:  # warm-up: each question's first compile, unmeasured
                await client.ask(question, user_id=USER, session_id=SESSION, timeout_s=30)
            for i in range(args.asks):
                began = time.perf_counter()
                question = QUESTIONS[i % len(QUESTIONS)]
                answer = await client.ask(question, user_id=USER, session_id=SESSION, timeout_s=30)
                asks.append((time.perf_counter() - began) * 1000.0)
                compiles.append(float(answer["timings_ms"].get("total", 0.0)))
        with phases("refusals"):
            refusals = [await refusal_ms(client) for _ in range(args.refusals)]
    ask_p50, compile_p50 = statistics.median(asks), statistics.median(compiles)
    return {
        "single_object_ok": ok,
        "asks": len(asks),
        "ask_p50_ms": round(ask_p50, 2),
        "ask_p99_ms": round(percentile(asks, 0.99), 2),
        "compile_p50_ms": round(compile_p50, 2),
        "ask_minus_compile_p50_ms": round(ask_p50 - compile_p50, 2),
        "refusal_reply_ms": round(statistics.median(refusals), 1) if refusals else None,
        "refusal_reply_max_ms": round(max(refusals), 1) if refusals else None,
    }


async def refusal_ms(client: EngramClient) -> float:
    """How long `ask` takes to raise when Ada's token asks for Bob's memory (ms)."""
    began = time.perf_counter()
    try:
        await client.ask(QUESTIONS[0], user_id="bob", session_id=SESSION, timeout_s=30)
    except EngramAuthorizationError:
        return (time.perf_counter() - began) * 1000.0
    msg = "a request for another user's memory was answered"
    raise AssertionError(msg)


async def ask_context(config: EngramConfig, prefix: str) -> Held:
    """`KEPT_QUESTION` asked twice: the items of the second answer, and whether the first was an
    SLB hit (after a restart: whether the session's buffer came back)."""
    async with EngramClient(client_config(config, prefix)) as client:
        first = await context_items(client, KEPT_QUESTION, USER, SESSION)
        second = await context_items(client, KEPT_QUESTION, USER, SESSION)
    return replace(second, cache_hit=first.cache_hit)


def asked(config: EngramConfig, prefix: str) -> Held:
    return asyncio.run(ask_context(config, prefix))


def registry_mode(info: StackInfo, folder: Path, partitions: int) -> bool:
    """A second worker in registry mode: a turn published and a context asked through the SDK."""
    with schema_registry() as url:
        prefix = "bench-registry"
        config = worker_config(info, folder, prefix, partitions, schema_registry_url=url, falkordb_host=None,
                               falkordb_port=None)  # fmt: skip
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        with WorkerProcess(config, folder / "worker-registry.log", topic_prefix=prefix):
            return asyncio.run(registry_turn(config, prefix))


async def registry_turn(config: EngramConfig, prefix: str) -> bool:
    async with EngramClient(client_config(config, prefix)) as client:
        return (await remembered(client, TURNS[:1])).ok


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
