"""`engram up / status / down` as a user runs them: separate processes sharing only the root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from engram.infra.processes import ProcessIdentity, is_running

pytestmark = pytest.mark.integration


def engram(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # noqa: S603 -- runs this repository's own CLI with fixed arguments
        [sys.executable, "-m", "engram.streams.cli", *args], capture_output=True, text=True, timeout=60, check=False
    )


def status_json(root: Path) -> tuple[int, dict[str, Any]]:
    done = engram("status", "--root", str(root), "--json")
    payload: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, payload


def test_up_status_down(tmp_path: Path) -> None:
    up = engram("up", "--root", str(tmp_path), "--bolt", "--json")
    try:
        assert up.returncode == 0, up.stderr
        info = json.loads(up.stdout)
        assert info["bootstrap_servers"].startswith("127.0.0.1:")
        assert info["bolt_url"].startswith("bolt://127.0.0.1:")
        assert Path(info["qdrant_path"]).is_dir()

        # `up` has exited; its servers keep running and answering.
        code, status = status_json(tmp_path)
        assert code == 0 and status["healthy"] is True
        assert [s["name"] for s in status["servers"]] == ["kafka", "falkordb"]
        pids = [s["pid"] for s in status["servers"]]

        again = engram("up", "--root", str(tmp_path))
        assert again.returncode == 1 and "already running" in again.stderr
    finally:
        down = engram("down", "--root", str(tmp_path), "--json")
    assert down.returncode == 0, down.stderr
    assert sorted(json.loads(down.stdout)["stopped"]) == ["falkordb", "kafka"]
    assert not any(is_running(ProcessIdentity(pid, "", None)) for pid in pids)

    code, status = status_json(tmp_path)
    assert code == 1 and status["info"] is None
    assert engram("down", "--root", str(tmp_path)).returncode == 0
