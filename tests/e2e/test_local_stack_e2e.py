"""The README's "Run your own worker" recipe (issue 48): with a stack running and no broker or
store setting anywhere, `engram worker`, `publish`, `ask`, `trace back`, `query`, `toc`,
`deadletters` and `forget` find it through ``.engram/stack.json``; what `ask` shows (a turn's
topic/partition/offset, a turn id) is what `trace back` takes; `query` and `toc` print text beside
ids; a refused record is a readable dead letter.

The working folder holds a copy of the test stack's state file, as `engram up` leaves one. Only
names are set (topic prefix, app id, graph, web port), so the test shares the broker with others.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import pytest

from engram.infra.config import StackInfo
from engram.streams.admin import Publisher, ensure_topics
from engram.streams.cli import main as cli_main
from engram.streams.codecs import TopicCodecs
from engram.streams.commands.deadletters import dead_letters
from engram.streams.demo import free_port
from engram.streams.local import local_config
from engram.streams.runner import die_with_parent, log_tail

pytestmark = pytest.mark.e2e
T = TypeVar("T")
TURNS = ["I moved to Berlin.", "I work on the payments team.", "My sister lives in Munich."]


@contextmanager
def engram_worker(folder: Path, port: int) -> Iterator[None]:
    """`engram worker`, as typed in ``folder``, with the environment as it is (no broker setting)."""
    with (folder / "worker.log").open("ab") as log:
        proc = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
            [sys.executable, "-m", "engram.streams.cli", "worker"], cwd=folder, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True, preexec_fn=die_with_parent,
        )  # fmt: skip
        try:
            until(lambda: _metrics(port, proc, folder), 90, "the worker serves /metrics")
            yield
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)


def _metrics(port: int, proc: subprocess.Popen[bytes], folder: Path) -> bool:
    assert proc.poll() is None, f"the worker exited:\n{log_tail(folder / 'worker.log')}"
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2):  # noqa: S310 - local
            return True
    except OSError:
        return False


def until(check: Callable[[], T | None], timeout_s: float, what: str) -> T:
    deadline = time.monotonic() + timeout_s
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"not within {timeout_s}s: {what}"
        time.sleep(0.5)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    capsys.readouterr()
    code = cli_main(list(argv))
    return code, capsys.readouterr().out


def test_the_run_your_own_worker_recipe_needs_no_setting(
    stack: StackInfo, tmp_path: Path, unique_name: str, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    (tmp_path / ".engram").mkdir()
    shutil.copy(stack.root / "stack.json", tmp_path / ".engram" / "stack.json")
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("ENGRAM_")]:
        monkeypatch.delenv(name)
    port = free_port()
    names = {"ENGRAM_TOPIC_PREFIX": unique_name, "ENGRAM_APP_ID": f"e2e-{unique_name}", "ENGRAM_PARTITIONS": "2",
             "ENGRAM_GRAPH_NAME": unique_name, "ENGRAM_WEB_PORT": str(port)}  # fmt: skip
    for name, value in names.items():
        monkeypatch.setenv(name, value)
    config = local_config(os.environ)
    assert config.bootstrap_servers == stack.bootstrap_servers and config.broker_profile == "standin"
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    lines = [{"user_id": "ada", "session_id": "s1", "turn_index": i, "role": "user", "content": text,
              "event_time_ms": 1_700_000_000_000 + i * 60_000} for i, text in enumerate(TURNS)]  # fmt: skip
    (tmp_path / "my-turns.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")

    with engram_worker(tmp_path, port):
        assert run(capsys, "publish", "turns", "my-turns.jsonl")[0] == 0
        refused = Publisher(config.bootstrap_servers)
        refused.publish(config.topics.turns, b"ada", b"not an Avro record")
        assert refused.flush() == 1

        def berlin() -> dict[str, Any] | None:
            code, out = run(capsys, "ask", "Where do I live?", "--user", "ada", "--session", "s1", "--json")
            items = json.loads(out)["items"] if code == 0 else []
            return next((item for item in items if item["text"] == TURNS[0]), None)

        source = until(berlin, 90, "ask shows Ada's turn")["provenance"][0]
        reference = f"{source['topic']}/{source['partition']}/{source['offset']}"

        def back(turn: str) -> dict[str, Any] | None:
            code, out = run(capsys, "trace", "back", turn, "--json")
            result: dict[str, Any] = json.loads(out)
            return result if code == 0 and len(result["results"]) == 2 or turn == reference and code == 0 else None

        assert until(lambda: back(reference), 30, "trace back by offset")["node"]["text"] == TURNS[0]
        assert [r["text"] for r in until(lambda: back("s1-2"), 30, "trace back by turn id")["results"]] == TURNS[1::-1]

        code, out = run(capsys, "query", "bm25", "--user", "ada", "--param", "text=Berlin")
        assert code == 0 and f'"{TURNS[0]}"' in out, out
        code, out = run(capsys, "toc", "--user", "ada", "--search", "Berlin")
        assert code == 0 and TURNS[0] in out, out

        def letter() -> dict[str, Any] | None:
            code, out = run(capsys, "deadletters", "--json")
            letters = [json.loads(line) for line in out.splitlines()] if code == 0 else []
            return next((x for x in letters if x.get("topic") == config.topics.turns), None)

        dead = until(letter, 60, "the refused record is a dead letter")
        assert dead["reason_class"] == "malformed" and dead["reason"] and dead["time_ms"] > 0
        code, out = run(capsys, "deadletters")
        assert code == 0 and f"{config.topics.turns}/{dead['partition']}/{dead['offset']}  malformed  " in out
        following = dead_letters(config.bootstrap_servers, config.topics.deadletter,
                                 TopicCodecs.for_config(config).deadletter, follow=True)  # fmt: skip
        first = next(following)  # from the beginning: the one so far
        assert first.record is not None and first.record["offset"] == dead["offset"]
        refused.publish(config.topics.turns, b"ada", b"")
        assert refused.flush() == 2  # delivered so far
        later = next(following)  # --follow waits for the next one
        following.close()
        assert later.record is not None and later.record["reason_class"] == "empty", later
        code, out = run(capsys, "forget", "--user", "nobody", "--json")
        assert code == 0 and json.loads(out)["delivered"] == 1
