"""Issue 48, item 5: a dev stack keeps what it knew. With a stack from `engram up` and a worker,
Ada's turns become facts, a context, the view's nodes and the graph's; then the worker stops,
`engram down` and `engram up` run, and a new worker on the same data folder shows the same
``/facts``, the same view counts and applied offsets, the same graph and the same context items,
and its first ask is an SLB hit (the session's buffer came back with the tables). Before the
broker was kept, ``/facts`` said ``owned: false`` here and the facts block was gone.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace
from functools import partial
from pathlib import Path

import pytest
from engram_client import EngramClient

from engram.benchmarks.client import TIMEOUT_S, TURNS, USER, Recall, asked, client_config, remembered, token
from engram.benchmarks.client import worker_config as bench_worker_config
from engram.benchmarks.client_held import KeptStack, after_start, before_stop
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, log_tail

pytestmark = pytest.mark.e2e


async def converse(config: EngramConfig, prefix: str) -> Recall:
    async with EngramClient(client_config(config, prefix)) as client:
        return await remembered(client, TURNS)


def test_engram_down_and_up_lose_nothing(tmp_path: Path) -> None:
    stack = KeptStack(tmp_path / ".engram")  # `engram up` and `engram down`, each its own process
    info = stack.up()
    try:
        # What is kept is under test, not the compile's 50 ms bound: a compile cut short on a busy
        # machine answers a partial context, which is not what the worker held.
        config = bench_worker_config(info, tmp_path, "kept", 2, compile_timeout_ms=5000.0)
        ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
        with WorkerProcess(config, tmp_path / "worker.log", topic_prefix="kept") as worker:
            recall = asyncio.run(converse(config, "kept"))
            assert recall.ok, f"{recall.summary()}\n/ready: {worker.page('/ready')}\n{log_tail(worker.log_path, 60)}"
            before = before_stop(config, USER, token(), partial(asked, config, "kept"), TIMEOUT_S)
        stack.down()
        assert stack.saved is not None and stack.saved["records"] > 0 and stack.saved["connected_groups"] == []

        info = stack.up()
        assert stack.restored is not None and stack.restored["moved"] == []
        assert stack.restored["records"] == stack.saved["records"]
        config = replace(config, bootstrap_servers=info.require_bootstrap_servers(),
                         falkordb_port=info.require_falkordb()[1])  # fmt: skip
        with WorkerProcess(config, tmp_path / "worker-again.log", topic_prefix="kept"):
            after = after_start(config, USER, token(), partial(asked, config, "kept"), TIMEOUT_S)
    finally:
        if stack.info is not None:
            stack.down(save=False)

    assert before.facts_owned and len(before.facts) >= 3, before.facts
    assert any("Berlin" in fact for fact in before.facts)
    assert after.facts == before.facts and after.facts_owned
    assert json.loads(after.view)["nodes"] > len(TURNS) and after.view == before.view
    assert after.graph_nodes == before.graph_nodes > 0
    assert after.items and after.items == before.items
    assert after.cache_hit, "the first ask after the restart missed the SLB"
