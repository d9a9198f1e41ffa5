"""Issue 17, end to end: `engram forget --user alice` erases Alice everywhere, and nothing of Bob's.

Through the broker, a worker with every store (the event log sealed per user, qdrant-edge, FalkorDB,
the view, the facts table): Alice's and Bob's conversations are ingested, Bob's contexts for a few
questions are recorded, then `engram forget --user alice` runs. After it:
- a compile for Alice finds none of her turns or facts, and the facts API lists none;
- a scan of the graph store and of Qdrant (after the worker stops) finds no node or point of
  Alice's, and none of her texts;
- the event log, read with the keys that remain, holds none of her records, and its raw bytes
  hold none of her texts;
- Bob's contexts are identical to those before (items, order and scores);
- the Trace table's changelog holds no part of Alice's state;
- the files of the worker's state tables on disk hold none of her texts, once compacted
  (streams/tablestore.py; the test compacts every half second).
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import pytest

from engram.benchmarks.chaos_reference import changelog_tables
from engram.infra.config import StackInfo
from engram.schemas.records import CompiledContext, ContextRequest, Layer
from engram.sinks.graph.cypher import nodes as node_cypher
from engram.sinks.graph.falkor import FalkorConfig, FalkorExecutor
from engram.sinks.qdrant.edge import EdgeVectorStore
from engram.streams.admin import ensure_topics, read_topic
from engram.streams.cli import main as cli_main
from engram.streams.config import EngramConfig
from engram.streams.replies import request_contexts
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import publish_turns, standin_config
from tests.e2e.test_facts_e2e import CONVERSATIONS, T0, interleaved_turns, wait_ingested
from tests.e2e.test_trust_e2e import wait_for

pytestmark = pytest.mark.e2e

QUESTIONS = ("Where do I work?", "Where do I live?", "What am I learning?")
ALICE_TEXTS = [said for said in CONVERSATIONS["alice"] if said not in CONVERSATIONS["bob"]]  # Bob says some too


def request(n: int, user: str, query: str) -> ContextRequest:
    layers: list[Layer] = ["USER", "SYSTEM"]
    return {
        "request_id": f"erase-{n}", "user_id": user, "session_id": f"{user}-s{n}", "query": query, "token_budget": 800,
        "authorized_layers": layers, "intent_hint": None, "agent_id": "test", "event_time_ms": T0 + 3_600_000,
    }  # fmt: skip


def digest(compiled: CompiledContext | None) -> str:
    assert compiled is not None, "no compiled context"
    items = [(i["node_id"], round(i["score"], 9), i["text"]) for i in compiled["items"]]
    return hashlib.sha256(json.dumps(items).encode()).hexdigest()


def bob_digests(config: EngramConfig, first: int) -> list[str]:
    """Bob's contexts for the questions; a context cut short by the time bound (a loaded machine)
    is asked again, so that what is compared is the whole answer."""
    digests = []
    for i, query in enumerate(QUESTIONS):
        for attempt in range(5):
            ask = request(first + 10 * i + attempt, "bob", query)
            compiled = request_contexts(config, [ask], 30.0).get(ask["request_id"])
            if compiled is not None and not compiled["partial"]:
                break
        digests.append(digest(compiled))
    return digests


def bob_settled(config: EngramConfig) -> list[str]:
    """Bob's contexts once his own first reads are counted: a context's nodes are used, and their use
    (NodesAccessed, once an hour of event time) moves their decay score when the view applies it;
    so Bob is asked until two rounds agree, and what the erasure must leave unchanged is that."""
    before = bob_digests(config, 10)
    for first in range(1000, 1500, 100):
        again = bob_digests(config, first)
        if again == before:
            return again
        before = again
    msg = f"Bob's contexts never settled: {before}"
    raise AssertionError(msg)


def alice_texts_in(texts: list[str]) -> list[str]:
    return [t for t in texts if any(said in t for said in ALICE_TEXTS)]


def graph_rows(config: EngramConfig) -> list[dict[str, Any]]:
    executor = FalkorExecutor(FalkorConfig(config.falkordb_host or "", config.falkordb_port or 0, config.graph_name))
    executor.setup()
    try:
        return executor.run(node_cypher.node_page(), {"after": "", "limit": 1_000_000})
    finally:
        executor.close()


def test_forget_erases_a_user_from_every_store_and_the_log(
    stack: StackInfo, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    host, port = stack.require_falkordb()
    config = standin_config(stack, tmp_path, unique_name, falkordb_host=host, falkordb_port=port,
                            graph_name=f"erase-{unique_name}", state_compact_interval_s=0.5)  # fmt: skip
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    for name, value in config.to_env(unique_name).items():
        monkeypatch.setenv(name, value)
    turns = interleaved_turns()
    publish_turns(config, turns)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_ingested(worker, config, len(turns))
        asked = iter(range(100, 1000))

        def alice_served() -> bool:
            served = request_contexts(config, [request(n := next(asked), "alice", "Where do I work?")], 30.0)
            return bool(alice_texts_in([i["text"] for i in served[f"erase-{n}"]["items"]]))

        wait_for(alice_served, "Alice's memory was never served")
        wait_for(lambda: any(alice_texts_in([str(r["props"].get("text", ""))]) for r in graph_rows(config)), "graph")
        bob_before = bob_settled(config)

        erased_at_ms = int(time.time() * 1000)
        assert cli_main(["forget", "--user", "alice", "--reason", "e2e"]) == 0
        deadline = time.monotonic() + 30
        while metric_value(worker.scrape() or "", "engram_erasures_total") < 1:
            assert time.monotonic() < deadline, "the worker never erased alice"
            time.sleep(0.25)
        deadline = time.monotonic() + 30
        while any(str(r["props"].get("user_id")) == "alice" for r in graph_rows(config)):
            assert time.monotonic() < deadline, "alice's nodes are still in the graph store"
            time.sleep(0.5)

        after = request_contexts(config, [request(2 + i, "alice", q) for i, q in enumerate(QUESTIONS)], 30.0)
        assert len(after) == len(QUESTIONS)
        for compiled in after.values():
            assert not alice_texts_in([i["text"] for i in compiled["items"]]), compiled["items"]
        assert bob_digests(config, 500) == bob_before
        time.sleep(2 * config.state_compact_interval_s)  # the tables that deleted keys compact
    left = [r["props"] for r in graph_rows(config) if alice_texts_in([json.dumps(r["props"])])]
    assert not left, [(p.get("user_id"), p.get("kind"), p.get("text")) for p in left]
    assert_no_vectors_of_alice(config)
    assert_log_holds_nothing_of_alice(config, erased_at_ms)
    assert_trace_state_holds_nothing_of_alice(config)
    assert_table_files_hold_nothing_of_alice(config)


def assert_table_files_hold_nothing_of_alice(config: EngramConfig) -> None:
    files = [p for p in (config.data_dir / "faust").rglob("*") if p.is_file()]
    assert any(p.name.endswith(".sst") or p.name.endswith(".log") for p in files), "no table store on disk"
    holding = [str(p) for p in files if any(said.encode() in p.read_bytes() for said in ALICE_TEXTS)]
    assert not holding, holding


def assert_trace_state_holds_nothing_of_alice(config: EngramConfig) -> None:
    """The Trace table, as its changelog ends: no part of Alice's state (her sessions' turn orders,
    her concepts' centroids) and no head; Bob's is there."""
    topic = f"{config.app_id}-trace-state-changelog"
    keys = changelog_tables(read_topic(config.bootstrap_servers, topic), ["trace-state"], config.app_id)["trace-state"]
    assert [k for k in keys if k.startswith("bob\x00")], "Bob's Trace state is not in parts"
    assert not [k for k in keys if k.split("\x00")[0] == "alice"]


def assert_no_vectors_of_alice(config: EngramConfig) -> None:
    store = EdgeVectorStore(config.data_dir / "qdrant")
    try:
        points = [p for c in store.collections() for p in store.scroll_all(c)]
    finally:
        store.close()
    assert points, "the worker wrote no vectors at all"
    assert not [p for p in points if p.payload.get("user_id") == "alice"]
    assert not alice_texts_in([str(p.payload.get("text", "")) for p in points])


def assert_log_holds_nothing_of_alice(config: EngramConfig, erased_at_ms: int) -> None:
    """Read with the keys that remain: no record of Alice's from before the erasure (what she asks
    afterwards is new, sealed with a new key), and no record anywhere holds her texts."""
    reader = eventlog_reader(config)
    for topic in reader.topics():
        for event in reader.read([topic]):
            value = event["value"] or b""
            if event["key"] == b"alice":
                assert event["timestamp_ms"] >= erased_at_ms, (topic, event["offset"])
            assert not any(said.encode() in value for said in ALICE_TEXTS), (topic, event["offset"])
    assert reader.erased > 0
    for segment in config.eventlog_dir.rglob("*.avro"):
        raw = segment.read_bytes()
        assert not any(said.encode() in raw for said in ALICE_TEXTS), segment
