"""Issue 19: a graph store outage during ingest does not stop the worker, and nothing is lost.

The graph store (FalkorDB) is frozen (SIGSTOP: it accepts no work, like a host that stopped
answering) for several seconds while turns stream in. The worker holds the memory batch (the
broker keeps the backlog), keeps answering context requests from its view, and after the store
comes back (SIGCONT) every event is applied once: the graph holds every turn's node, no id twice.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path
from typing import cast

import pytest

from engram.infra.config import StackInfo
from engram.infra.state import read_state
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.codecs import TopicCodecs
from engram.streams.replies import request_contexts
from engram.streams.runner import WorkerProcess, metric_value
from tests.e2e.support import standin_config
from tests.e2e.test_facts_e2e import make_turn
from tests.e2e.test_trust_e2e import context_request

pytestmark = pytest.mark.e2e

FROZEN_S = 6.0


def falkordb_pid(stack: StackInfo) -> int:
    state = read_state(stack.root / "stack.json")
    assert state is not None, f"no stack state under {stack.root}"
    return next(s.pid for s in state.servers if "falkor" in s.name.lower())


def test_a_frozen_graph_store_is_ridden_out(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    host, port = stack.require_falkordb()
    graph_name = f"outage-{unique_name}"
    config = standin_config(stack, tmp_path, unique_name, falkordb_host=host, falkordb_port=port, graph_name=graph_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)
    pid = falkordb_pid(stack)
    texts = [f"Note {i}: the ledger service moved to rack {i}." for i in range(12)]
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        os.kill(pid, signal.SIGSTOP)
        try:
            for i, text in enumerate(texts):
                publisher.publish(config.topics.turns, b"ada", codecs.turns.encode(make_turn("ada", i, text)))
            publisher.flush()
            time.sleep(2.0)
            during = request_contexts(config, [context_request(1, "ada", None, ["USER"])], 15.0)
            assert "trust-1" in during, "the compile path stopped answering during the outage"
            time.sleep(max(0.0, FROZEN_S - 2.0))
            assert worker.wait_exit(0.0) is None, "the worker exited during the outage"
        finally:
            os.kill(pid, signal.SIGCONT)
        deadline = time.monotonic() + 60
        while metric_value(worker.scrape() or "", "engram_sink_applied_total", {"sink": "graph"}) < len(texts):
            assert worker.wait_exit(0.0) is None, "the worker exited after the outage"
            assert time.monotonic() < deadline, "the graph never caught up after the outage"
            time.sleep(0.5)
    executor = FalkorExecutor(FalkorConfig(host, port, graph=graph_name))
    executor.setup()
    try:
        rows = executor.run(node_cypher.node_page(), {"after": "", "limit": 10_000})
        ids = [str(row["id"]) for row in rows]
        texts_found = {str(cast(dict[str, object], row["props"]).get("text", "")) for row in rows}
    finally:
        executor.delete_graph()
        executor.close()
    assert len(ids) == len(set(ids))
    assert set(texts) <= texts_found, "a turn is missing from the graph after the outage"
