"""Issue 48 item 12: every script under examples/ runs, as a user would run it, against a worker.

One worker on the stand-ins (per-test topics); each example runs as a subprocess with the
worker's ENGRAM_* settings in its environment (`EngramConfig.to_env`, as `engram up`'s users
export them) and the checkout's ``engram`` command on its PATH, and the test checks what its user
would:

- ``agent_app.py`` talks three turns with Ada and prints a compiled context whose items recall what
  she said, each citing the turns topic;
- ``import_locomo.sh`` imports one LoCoMo conversation: every turn delivered, none refused, and the
  worker ingests them all (its ingest count and its event log);
- ``backfill_by_replay.py`` (after the worker stopped) replays the logged turns into a fresh topic
  set: the new turns topic holds exactly the logged turns;
- ``mcp/engram.mcp.json`` parses and launches ``engram mcp`` (tests/e2e/test_mcp_e2e.py runs it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engram.benchmarks.locomo_reader import conversation_turns
from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn
from engram.streams.admin import ensure_topics, read_topic
from engram.streams.config import EngramConfig
from engram.streams.runner import WorkerProcess, metric_value
from engram.streams.sealing import eventlog_reader
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
LOCOMO_DIR = Path(__file__).resolve().parents[3] / "shared" / "benchdata" / "locomo"
CONVERSATION = "30"  # the smallest of the shared conversations
AGENT_TURNS = 6  # agent_app.py: three user messages, three answers
TURNS: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")


def run_example(args: list[str], env: dict[str, str], cwd: Path, timeout_s: float = 60) -> str:
    """Run one example; fail with its output unless it exits 0; returns its stdout."""
    done = subprocess.run(args, env=env, cwd=cwd, capture_output=True, text=True, timeout=timeout_s, check=False)  # noqa: S603 - our own scripts
    assert done.returncode == 0, f"{args[-1]} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done.stdout


def logged_turn_ids(config: EngramConfig) -> list[str]:
    reader = eventlog_reader(config)
    if config.topics.turns not in reader.topics():
        return []
    return [TURNS.decode(e["value"] or b"")["turn_id"] for e in reader.read([config.topics.turns])]


def wait_ingested(worker: WorkerProcess, config: EngramConfig, turns: int, timeout_s: float = 45) -> list[str]:
    """Until the worker counts ``turns`` turns ingested and its event log holds them; their ids."""
    deadline = time.monotonic() + timeout_s
    while True:
        done = metric_value(worker.scrape() or "", "engram_ingest_messages_total", {"topic": config.topics.turns})
        logged = logged_turn_ids(config)
        if done >= turns and len(logged) >= turns:
            return logged
        assert time.monotonic() < deadline, f"after {timeout_s:.0f}s: {done} turns ingested, {len(logged)} logged"
        time.sleep(0.25)


def test_every_example_runs_against_a_worker(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    conversation = LOCOMO_DIR / f"{CONVERSATION}.json"
    if not conversation.is_file():
        pytest.fail(f"no {conversation} (shared/benchdata must sit beside the repository)")
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    bin_dir = Path(sys.executable).parent
    env = {**os.environ, **config.to_env(unique_name), "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
           "ENGRAM_CLI": str(bin_dir / "engram")}  # fmt: skip
    cwd = tmp_path / "user"  # no .engram/stack.json here: the ENGRAM_* settings alone find the worker
    cwd.mkdir()

    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        printed = run_example([sys.executable, str(EXAMPLES / "agent_app.py")], env, cwd)
        assert "compiled context" in printed and "for ada" in printed, printed
        items = [line for line in printed.splitlines() if line.startswith("- [")]
        assert any("I just moved to Berlin" in line for line in items), printed
        cited = [line for line in printed.splitlines() if line.strip().startswith("provenance:")]
        assert len(cited) == len(items) and any(f"{config.topics.turns}/" in line for line in cited), printed

        expected = conversation_turns(json.loads(conversation.read_text(encoding="utf-8")), CONVERSATION)
        printed = run_example(["bash", str(EXAMPLES / "import_locomo.sh"), str(LOCOMO_DIR), CONVERSATION], env, cwd)
        summary = json.loads(printed.strip().splitlines()[-1])
        assert summary == {"valid": len(expected), "refused": 0, "delivered": len(expected),
                           "topic": config.topics.turns, "dry_run": False}  # fmt: skip
        logged = wait_ingested(worker, config, AGENT_TURNS + len(expected))
        assert {t["turn_id"] for t in expected} <= set(logged)

    prefix = f"{unique_name}-backfill"
    printed = run_example([sys.executable, str(EXAMPLES / "backfill_by_replay.py"), prefix], env, cwd)
    summary = json.loads(printed.strip().splitlines()[-1])
    assert summary["delivered"] == summary["read"] == len(logged) and summary["failed"] == 0, summary
    target = EngramConfig().topics.prefixed(prefix).turns
    replayed = [TURNS.decode(m.value() or b"")["turn_id"] for m in read_topic(config.bootstrap_servers, target)]
    assert sorted(replayed) == sorted(logged)

    mcp = json.loads((EXAMPLES / "mcp" / "engram.mcp.json").read_text(encoding="utf-8"))
    server = mcp["mcpServers"]["engram"]
    assert Path(server["command"]).name == "engram" and server["args"] == ["mcp"]
    assert {"ENGRAM_TOKEN", "ENGRAM_DATA_DIR"} <= set(server["env"])
