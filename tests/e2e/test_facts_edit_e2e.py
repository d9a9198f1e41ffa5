"""Issue 18, end to end: people edit, delete and clear their facts through the worker's facts API,
and every change is an event in the log with who made it and why.

Through the broker, a worker with a token key: Alice's and Bob's conversations ingested (each turn
with its author's token); Alice edits where she lives, deletes one language and clears the
``language`` category... then the listing shows each change, engram.memory holds a FactDecided per
change with rule ``user-edit``/``user-delete`` and her principal in the reason, and Bob's token
can neither read nor change her facts.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from engram.infra.config import StackInfo
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, FactDecided, MemoryEvent
from engram.streams.admin import ensure_topics
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import publish_turns, standin_config
from tests.e2e.test_facts_e2e import ALICE_ACTIVE, interleaved_turns, wait_ingested
from tests.e2e.test_trust_e2e import SECRET, get, token, wait_for

pytestmark = pytest.mark.e2e


def post(config: EngramConfig, path: str, tok: str | None, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    url = f"http://{config.web_host}:{config.web_port}{path}"
    headers = {"Content-Type": "application/json", **({"Authorization": f"Bearer {tok}"} if tok else {})}
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")  # noqa: S310
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310 - the test's own worker
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def listed(config: EngramConfig) -> dict[tuple[str, str], str]:
    status, body = get(config, "/facts?user=alice", token("user:alice"))
    assert status == 200
    return {(f["relation"], f["value"]): f["fact_id"] for f in body["facts"]}


def test_people_edit_delete_and_clear_their_facts_as_events(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name, auth_key=SECRET)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    turns: list[ConversationTurn] = [{**t, "token": token(f"user:{t['user_id']}")} for t in interleaved_turns()]
    publish_turns(config, turns)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        wait_ingested(worker, config, len(turns))
        facts = wait_for(lambda: (found := listed(config)) and set(found) == ALICE_ACTIVE and found, "facts")
        alice = token("user:alice")

        assert post(config, "/facts/edit?user=alice", token("user:bob"), {"fact_id": "x", "value": "y"})[0] == 403
        assert get(config, "/facts?user=alice", token("user:bob"))[0] == 403
        denied = metric_value(worker.scrape() or "", "engram_authorization_denials_total", {"path": "facts"})
        assert denied == 2
        status, body = post(config, "/facts/edit?user=alice", alice, {"fact_id": "nope", "value": "Berlin"})
        assert status == 400 and "no active fact" in body["error"]

        edit = {"fact_id": facts[("lives_in", "Mountain View")], "value": "Berlin", "reason": "moved last month"}
        assert post(config, "/facts/edit?user=alice", alice, edit)[0] == 202
        wait_for(lambda: ("lives_in", "Berlin") in listed(config), "the edit never showed")
        assert ("lives_in", "Mountain View") not in listed(config)

        gone = {"fact_id": facts[("works_at", "Google")], "reason": "left"}
        assert post(config, "/facts/delete?user=alice", alice, gone)[0] == 202
        wait_for(lambda: ("works_at", "Google") not in listed(config), "the delete never showed")

        status, cleared = post(config, "/facts/clear?user=alice", alice, {"search": "python go", "reason": "tidy"})
        assert status == 202 and len(cleared["events"]) == 0  # no fact holds both words
        status, cleared = post(config, "/facts/clear?user=alice", alice, {"category": "skill", "reason": "tidy"})
        assert status == 202
        wait_for(lambda: not {r for r, _ in listed(config)} & {"speaks_language"}, "the clear never showed")
        assert set(listed(config)) == {("lives_in", "Berlin")}
        page = f"http://{config.web_host}:{config.web_port}/facts/ui"
        with urllib.request.urlopen(page, timeout=5) as response:  # noqa: S310 - the test's own worker
            html = response.read().decode()
        assert response.headers["Content-Type"].startswith("text/html")
        calls = ('change("edit"', 'change("delete"', 'change("clear"', '"/history"', "Authorization")
        assert all(call in html for call in calls)
    assert_changes_logged(config)


def assert_changes_logged(
    config: EngramConfig, edits: int = 1, deletes: int = 3, reason: str = "moved last month"
) -> None:
    """Each change is a FactDecided in the log with the editor and the reason."""
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    decided: list[FactDecided] = []
    for event in eventlog_reader(config).read([config.topics.memory]):
        change = change_as(codec.decode(event["value"] or b""), FactDecided)
        if change is not None and change["rule"].startswith("user-"):
            decided.append(change)
    rules = sorted((d["rule"], d["decision"]) for d in decided)
    assert rules == [("user-delete", "retract")] * deletes + [("user-edit", "replace")] * edits, rules
    assert all(d["reason"].startswith(("edited by user:alice", "deleted by user:alice")) for d in decided)
    assert any(reason in d["reason"] for d in decided)
