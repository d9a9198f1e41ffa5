"""Issue 17, end to end: a worker with a token key believes tokens and relationships, not claims.

Through the broker, with Alice's and Bob's conversations (each turn published with its author's
token) and a note Carol writes into ``team:payments`` (a ``writer_of`` tuple lets her):
- a turn without a token, or one written into a team its producer may not write to, is
  dead-lettered as ``unauthorized`` and never reaches memory;
- a request with no token, an expired one, or Alice's token asking for Bob's memory, is
  dead-lettered as ``unauthorized`` with the reason; the last two, whose requester is known (a token
  the key signed), are also answered with the reason on the requester's topic;
- Alice's token gets her own memory, and claiming TEAM gets her nothing of the team's until a
  ``member_of`` tuple says she belongs; removing the tuple takes it away again at a later request;
- two users asking on the same session name each get their own context (the SLB key has the user);
- a graph query passes the same gate, and its refusal is answered too;
- the facts API answers a bad listing parameter with a 400 that says what it must be.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from engram.infra.config import StackInfo
from engram.processors.trust.tokens import TokenConfig, mint
from engram.schemas.codec import AvroCodec
from engram.schemas.records import CompiledContext, ContextRequest, ConversationTurn, DeadLetter, GraphRequest, Layer
from engram.streams.admin import Publisher, ensure_topics, read_topic
from engram.streams.cli import main as cli_main
from engram.streams.codecs import TopicCodecs
from engram.streams.config import EngramConfig
from engram.streams.replies import graph_answers, request_contexts
from engram.streams.runner import WorkerProcess
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import standin_config
from tests.e2e.test_facts_e2e import ALICE_ACTIVE, T0, interleaved_turns, make_turn, wait_ingested

pytestmark = pytest.mark.e2e

SECRET = "e2e-trust-secret-of-32-bytes-at-least"
TEAM_NOTE = "The payments team deploys the ledger service every Tuesday at noon."
FORGED_NOTE = "The payments team deploys the ledger service every Friday at midnight."


def token(subject: str, ttl_s: int = 600) -> str:
    return mint(TokenConfig(SECRET), subject, int(time.time()) + ttl_s)


def context_request(n: int, user: str, tok: str | None, layers: list[Layer], session: str = "s") -> ContextRequest:
    return {
        "request_id": f"trust-{n}", "user_id": user, "session_id": session,
        "query": "When does the payments team deploy the ledger?", "token_budget": 600,
        "authorized_layers": layers, "intent_hint": None, "agent_id": "test", "event_time_ms": T0 + 3_600_000,
        "token": tok,
    }  # fmt: skip


def ask(config: EngramConfig, request: ContextRequest) -> CompiledContext | None:
    return request_contexts(config, [request], 20.0).get(request["request_id"])


def texts(compiled: CompiledContext | None) -> list[str]:
    assert compiled is not None, "no compiled context"
    return [item["text"] for item in compiled["items"]]


def dead_letters(config: EngramConfig) -> list[DeadLetter]:
    codec: AvroCodec[DeadLetter] = AvroCodec("DeadLetter")
    return [codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.deadletter)]


def wait_for(check: Any, what: str, timeout_s: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, what
        time.sleep(0.5)


def relate(*args: str) -> None:
    """`engram relate …` (the environment names this test's broker and topics)."""
    assert cli_main(["relate", *args]) == 0


def test_tokens_and_relationships_decide_what_a_request_may_read(
    stack: StackInfo, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    for name, value in config.to_env(unique_name).items():
        monkeypatch.setenv(name, value)
    codecs = TopicCodecs.for_config(config)
    publisher = Publisher.for_config(config)
    relate("user:carol", "writer_of", "team:payments")
    note: ConversationTurn = {**make_turn("carol", 0, TEAM_NOTE), "layer": "TEAM", "instance": "team:payments"}
    turns: list[ConversationTurn] = [
        {**t, "token": token(f"user:{t['user_id']}")} for t in [*interleaved_turns(), note]
    ]
    forged: list[ConversationTurn] = [
        {**make_turn("mallory", 0, FORGED_NOTE), "layer": "TEAM", "instance": "team:payments",
         "token": token("user:mallory")},
        {**make_turn("bob", 99, FORGED_NOTE), "token": None},
    ]  # fmt: skip
    for turn in [*forged, *turns]:
        publisher.publish(config.topics.turns, turn["user_id"].encode(), codecs.turns.encode(turn))
    assert publisher.flush() == len(turns) + len(forged)

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_ingested(worker, config, len(turns))
        ingest_letters = wait_for(lambda: [d for d in dead_letters(config) if d["stage"] == "ingest"], "no refusal")
        refusals = sorted(d["reason"] for d in ingest_letters)
        assert len(refusals) == 2 and "no bearer token" in refusals[0], refusals
        assert "user:mallory may not write into team:payments" in refusals[1], refusals
        assert {d["error_type"] for d in ingest_letters} == {"AuthorizationError"}
        own = wait_for(lambda: ask(config, context_request(1, "alice", token("user:alice"), ["USER"])), "no answer")
        assert_facts_api(config)
        assert any("Google" in t for t in texts(own))

        refused = [
            context_request(2, "alice", None, ["USER"]),
            context_request(3, "alice", token("user:alice", ttl_s=-3600), ["USER"]),
            context_request(4, "bob", token("user:alice"), ["USER"]),
        ]
        answers = request_contexts(config, refused, 10.0)
        assert sorted(answers) == ["trust-3", "trust-4"], answers  # no token: nobody known to tell
        assert {a["error_code"] for a in answers.values()} == {"unauthorized"}
        assert "expired" in (answers["trust-3"]["error"] or "") and answers["trust-4"]["items"] == []
        assert answers["trust-4"]["error"] == "user:alice may not read user:bob's memory"

        def compile_letters() -> list[DeadLetter]:
            return [d for d in dead_letters(config) if d["stage"] == "compile"]

        letters = wait_for(lambda: len(compile_letters()) >= 3 and compile_letters(), "three dead letters")
        reasons = " | ".join(d["reason"] for d in letters)
        for expected in ("no bearer token", "expired", "user:alice may not read user:bob's memory"):
            assert expected in reasons, reasons
        assert {d["error_type"] for d in letters} == {"AuthorizationError"}

        claim: list[Layer] = ["TEAM", "USER"]
        asked = iter(range(100, 10_000))

        def team_note_seen() -> bool:
            request = context_request(next(asked), "alice", token("user:alice"), claim)
            return TEAM_NOTE in texts(ask(config, request))

        assert not team_note_seen()
        relate("user:alice", "member_of", "team:payments")
        wait_for(team_note_seen, "membership never granted the TEAM layer")
        seen = texts(ask(config, context_request(next(asked), "alice", token("user:alice"), claim)))
        assert FORGED_NOTE not in seen
        relate("user:alice", "member_of", "team:payments", "--remove")
        wait_for(lambda: not team_note_seen(), "the revoked membership still granted the TEAM layer")

        both = [context_request(8, "alice", token("user:alice"), ["USER"], "cli"),
                context_request(9, "bob", token("user:bob"), ["USER"], "cli")]  # fmt: skip
        answers = request_contexts(config, both, 20.0)
        assert set(answers) == {"trust-8", "trust-9"}
        assert any("Google" in t for t in texts(answers["trust-8"]))
        assert not any("Google" in t for t in texts(answers["trust-9"]))
        assert_private_delivery(config)

        graph: GraphRequest = {
            "query_id": "trust-graph", "user_id": "alice", "authorized_layers": ["USER"], "query_type": "bm25",
            "params_json": json.dumps({"text": "Google"}), "apply": False, "agent_id": "test",
            "event_time_ms": T0, "token": token("user:bob"),
        }  # fmt: skip
        refused_graph = graph_answers(config, [graph], 10.0)["trust-graph"]
        assert (
            not refused_graph["ok"]
            and refused_graph["error"] == "unauthorized: user:bob may not read user:alice's memory"
        )
        assert wait_for(lambda: [d for d in dead_letters(config) if d["stage"] == "graph"], "no graph dead letter")
    assert_no_token_kept(config)


def assert_private_delivery(config: EngramConfig) -> None:
    """Each requester's contexts went to its own topic only; the shared topic got none. (Alice's
    topic also holds the refusal of her request for Bob's memory: an answer to her, with nothing
    of his.)"""
    codec: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
    for user in ("alice", "bob"):
        topic = f"{config.topics.compiled}.user.{user}"
        received = [codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, topic)]
        contexts = [c for c in received if not c.get("error_code")]
        assert contexts and {c["user_id"] for c in contexts} == {user}, (topic, len(received))
        assert all(not c["items"] for c in received if c.get("error_code"))
    assert read_topic(config.bootstrap_servers, config.topics.compiled) == []
    other: ContextRequest = {**context_request(50, "alice", token("user:alice"), ["USER"]),
                             "reply_topic": f"{config.topics.compiled}.user.bob"}  # fmt: skip
    assert request_contexts(config, [other], 5.0) == {}
    letters = wait_for(lambda: [d for d in dead_letters(config) if "may not receive answers" in d["reason"]], "none")
    assert letters[0]["error_type"] == "AuthorizationError"


def get(config: EngramConfig, path: str, tok: str | None) -> tuple[int, dict[str, Any]]:
    url = f"http://{config.web_host}:{config.web_port}{path}"
    request = urllib.request.Request(url, headers={"Authorization": f"Bearer {tok}"} if tok else {})  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - the test's own worker
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def assert_facts_api(config: EngramConfig) -> None:
    """The facts API answers a user's own token, and a reader's; nobody else's."""
    status, listed = get(config, "/facts?user=alice", token("user:alice"))
    assert status == 200 and listed["owned"] is True
    assert get(config, "/facts?user=alice&limit=abc", token("user:alice")) == (
        400,
        {"error": "limit must be a whole number, not 'abc'"},
    )
    assert {(f["relation"], f["value"]) for f in listed["facts"]} == ALICE_ACTIVE
    status, searched = get(config, "/facts?user=alice&search=google", token("user:alice"))
    assert [(f["relation"], f["value"]) for f in searched["facts"]] == [("works_at", "Google")]
    status, counts = get(config, "/facts/summary?user=alice", token("user:alice"))
    assert status == 200 and counts["active"] == len(ALICE_ACTIVE)
    assert counts["long_term"] + counts["short_term"] == counts["active"]
    for tok, reason in ((token("user:bob"), "may not read user:alice"), (None, "no bearer token")):
        status, refused = get(config, "/facts?user=alice", tok)
        assert status == 403 and reason in refused["error"]
    assert get(config, "/facts?user=alice&horizon=forever", token("user:alice"))[0] == 400


def assert_no_token_kept(config: EngramConfig) -> None:
    """No bearer token in the immutable log: requests are archived, and dead-lettered, without it."""
    requests: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
    reader = eventlog_reader(config)
    logged = [requests.decode(e["value"] or b"") for e in reader.read([config.topics.requests])]
    assert len(logged) >= 9 and all(r["token"] is None for r in logged)  # 1 + 3 refused + 3 TEAM + 2
    turns: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    written = [turns.decode(e["value"] or b"") for e in reader.read([config.topics.turns])]
    assert written and all(t.get("token") is None for t in written)
    for letter in dead_letters(config):
        if letter["topic"] == config.topics.requests:
            assert requests.decode(letter["value"] or b"")["token"] is None
