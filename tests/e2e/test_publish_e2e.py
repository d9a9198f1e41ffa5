"""Issue 18: `engram publish turns` and `engram import locomo` through the broker.

Every valid line is delivered (counted on the topic), every bad one is reported with its line
number and reason, and the command says so in its exit code and summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram.benchmarks.locomo_reader import conversation_turns
from engram.infra.config import StackInfo
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn
from engram.streams.admin import ensure_topics, read_topic
from engram.streams.cli import main as cli_main
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e

LOCOMO = Path(__file__).resolve().parents[2].parent / "shared" / "benchdata" / "locomo" / "26.json"


def _line(index: int, **changes: Any) -> str:
    turn = {"user_id": "ada", "session_id": "s", "turn_index": index, "role": "user",
            "content": f"turn {index}", "event_time_ms": 1_700_000_000_000 + index}  # fmt: skip
    return json.dumps({**turn, **changes})


def test_publish_and_import_deliver_every_valid_turn_and_name_every_bad_line(
    stack: StackInfo, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    for name, value in config.to_env(unique_name).items():
        monkeypatch.setenv(name, value)
    lines = [_line(0), "{broken", _line(1, role="robot"), _line(2), _line(3, user_id=""), "", _line(4)]
    source = tmp_path / "turns.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    capsys.readouterr()
    assert cli_main(["publish", "turns", str(source), "--json"]) == 1
    out, err = capsys.readouterr()
    assert json.loads(out) == {"valid": 3, "refused": 3, "delivered": 3, "topic": config.topics.turns,
                               "dry_run": False}  # fmt: skip
    assert [line.split(":")[0] for line in err.strip().splitlines()] == ["line 2", "line 3", "line 5"]
    assert "'robot'" in err and "user_id is empty" in err
    codec: AvroCodec[ConversationTurn] = AvroCodec("ConversationTurn")
    published = [codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.turns)]
    assert sorted(t["turn_id"] for t in published) == ["s-0", "s-2", "s-4"]

    expected = conversation_turns(json.loads(LOCOMO.read_text(encoding="utf-8")), "26")
    assert cli_main(["import", "locomo", str(LOCOMO), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["delivered"] == summary["valid"] == len(expected) and summary["refused"] == 0
    after = [codec.decode(m.value() or b"") for m in read_topic(config.bootstrap_servers, config.topics.turns)]
    assert {t["turn_id"] for t in after} >= {t["turn_id"] for t in expected}
