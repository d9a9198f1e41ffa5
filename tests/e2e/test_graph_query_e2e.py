"""Issue 16, end to end: `engram query` through the real broker to a worker's graph engine.

Alice's and Bob's conversations (the facts test's) go through a worker subprocess. Then, over
engram.graph.requests and engram.graph.answers:
- BM25 finds Alice's move to Google for Alice, and none of her memory for Bob (restrict first);
- revising the turn where Alice announced the new job makes the facts it alone supports fall, and
  the fold's derived edges are there: the turn CONTRADICTS the job it retracted;
- a node Alice cannot see is an error answer, not a dead letter; a request of an unknown type is
  dead-lettered with its reason;
- an applied consolidation answers with ``applied`` and its events;
- the `engram query` command prints the same answer as JSON.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from engram.infra.config import StackInfo
from engram.processors.trace.builder import event_node_id
from engram.schemas.codec import AvroCodec
from engram.schemas.records import DeadLetter, FactDecided, GraphAnswer, GraphRequest
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.cli import main as cli_main
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.replies import graph_answers
from engram.streams.runner import WorkerProcess
from tests.e2e.support import standin_config
from tests.e2e.test_facts_e2e import T0, decided, interleaved_turns, wait_ingested

pytestmark = pytest.mark.e2e


def request(user: str, query_type: str, n: int, apply: bool = False, **params: Any) -> GraphRequest:
    return {
        "query_id": f"{user}-{query_type}-{n}", "user_id": user, "authorized_layers": ["USER"],
        "query_type": query_type, "params_json": json.dumps(params), "apply": apply, "agent_id": "test",
        "event_time_ms": T0 + 3_600_000 + n,
    }  # fmt: skip


def ask(config: EngramConfig, req: GraphRequest) -> tuple[GraphAnswer, dict[str, Any]]:
    answer = graph_answers(config, [req], 30.0).get(req["query_id"])
    assert answer is not None, f"no answer to {req['query_type']} within 30 s"
    return answer, json.loads(answer["result_json"])


def wait_for_graph(config: EngramConfig, text: str, timeout_s: float = 30.0) -> dict[str, Any]:
    """BM25 for ``text`` as Alice until the graph engine holds her memory."""
    deadline = time.monotonic() + timeout_s
    n = 0
    while True:
        n += 1
        answer, result = ask(config, request("alice", "bm25", n, text=text))
        assert answer["ok"], answer["error"]
        if result["matches"]:
            return result
        assert time.monotonic() < deadline, "the graph engine never held Alice's memory"
        time.sleep(0.5)


def test_graph_queries_round_trip_through_the_broker(
    stack: StackInfo, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)
    turns = interleaved_turns()
    for turn in turns:
        publisher.publish(config.topics.turns, turn["user_id"].encode(), codecs.turns.encode(turn))
    assert publisher.flush() == len(turns)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        raw = wait_ingested(worker, config, len(turns))
        facts = {user: decided(r) for user, r in raw.items()}
        found = wait_for_graph(config, "new job at Google")
        job_turn = event_node_id("alice", "alice-turn-3")
        assert job_turn in {m["node_id"] for m in found["matches"]}

        alice_ids = {d["fact_id"] for d in facts["alice"]} | {
            event_node_id("alice", f"alice-turn-{i}") for i in range(5)
        }
        answer, for_bob = ask(config, request("bob", "bm25", 100, text="new job at Google", limit=50))
        assert answer["ok"] and not {m["node_id"] for m in for_bob["matches"]} & alice_ids

        answer, revision = ask(config, request("alice", "revise", 101, node=job_turn))
        assert answer["ok"], answer["error"]
        only_from_job_turn = {
            d["fact_id"] for d in _stored(facts["alice"]) if d["source_event_ids"] == ["alice-turn-3"]
        }
        falls = {a["node_id"] for a in revision["affected"] if a["falls"]}
        assert only_from_job_turn and only_from_job_turn <= falls

        meta = next(d["fact_id"] for d in facts["alice"] if d["value"] == "Meta" and d["decision"] == "retract")
        answer, traversal = ask(config, request("alice", "traversal", 102, node=job_turn, edge_types=["CONTRADICTS"]))
        assert answer["ok"] and meta in {s["node_id"] for s in traversal["steps"]}

        bobs = event_node_id("bob", "bob-turn-0")
        answer, _ = ask(config, request("alice", "resolve", 103, node=bobs))
        assert not answer["ok"] and bobs in (answer["error"] or "")

        answer, report = ask(config, request("alice", "consolidate", 104, apply=True))
        assert answer["ok"] and report["applied"] and report["events"] == answer["events"]

        bad = request("alice", "telepathy", 105)
        publisher.publish(config.topics.graph_requests, b"alice", codecs.graph_requests.encode(bad))
        publisher.flush()
        assert "unknown query type 'telepathy'" in _dead_letter_reason(config, 30.0)

        for name, value in config.to_env(unique_name).items():
            monkeypatch.setenv(name, value)
        capsys.readouterr()
        assert cli_main(["query", "pagerank", "--user", "alice", "--param", "limit=3", "--json"]) == 0
        printed = json.loads(capsys.readouterr().out)
        assert printed["ok"] and len(printed["result"]["scores"]) == 3


def _stored(decisions: list[FactDecided]) -> list[FactDecided]:
    return [d for d in decisions if d["decision"] in ("store", "replace")]


def _dead_letter_reason(config: EngramConfig, timeout_s: float) -> str:
    codec: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for message in read_topic(config.bootstrap_servers, config.topics.deadletter):
            letter = codec.decode(message.value() or b"")
            if letter["topic"] == config.topics.graph_requests:
                return letter["reason"]
        time.sleep(0.5)
    msg = "no dead letter for the bad graph request"
    raise AssertionError(msg)
