"""The launcher stops only what it started, and a failing start is loud and leaves nothing behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from engram.infra.config import StackConfig
from engram.infra.control import stop_recorded
from engram.infra.errors import StandInStartError
from engram.infra.launcher import EmbeddedStack
from engram.infra.processes import ProcessIdentity, is_running

pytestmark = pytest.mark.integration


@pytest.fixture
def bystander() -> Iterator[subprocess.Popen[bytes]]:
    """An unrelated process that no launcher call may touch."""
    process = subprocess.Popen(["sleep", "120"])  # noqa: S607 -- a test bystander; `sleep` from PATH is fine
    try:
        yield process
    finally:
        process.kill()
        process.wait()


def processes_in(root: Path) -> list[int]:
    """PIDs of processes whose working directory is `root` (the launcher runs servers there)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cwd = os.readlink(entry / "cwd")
            except OSError:
                continue
            if Path(cwd) == root.resolve():
                found.append(int(entry.name))
    return found


def test_stop_kills_only_the_recorded_processes(tmp_path: Path, bystander: subprocess.Popen[bytes]) -> None:
    stack = EmbeddedStack(StackConfig(root=tmp_path, qdrant=False, stop_grace_s=5.0))
    info = stack.start()
    pids = [record.pid for record in stack.records]
    assert len(pids) == 2 and all(is_running(record.identity) for record in stack.records)

    # A client still connected must not hold the broker up (tansu ignores SIGTERM until clients leave).
    host, _, port = info.require_bootstrap_servers().rpartition(":")
    with socket.create_connection((host, int(port))):
        started = time.monotonic()
        assert sorted(stack.stop()) == ["falkordb", "kafka"]
        assert time.monotonic() - started < 5.0
    assert not any(is_running(ProcessIdentity(pid, "", None)) for pid in pids)
    assert bystander.poll() is None
    assert not (tmp_path / "stack.json").exists()


def test_stop_from_another_process_leaves_a_reused_pid_alone(
    tmp_path: Path, bystander: subprocess.Popen[bytes]
) -> None:
    stack = EmbeddedStack(StackConfig(root=tmp_path, falkordb=False, qdrant=False))
    stack.start()
    broker = stack.records[0]
    # Pretend the state file also names the bystander's pid, recorded for another program
    # (as after a reboot or pid reuse): `down` must not signal it.
    state = json.loads((tmp_path / "stack.json").read_text())
    state["servers"].append({**state["servers"][0], "name": "falkordb", "pid": bystander.pid, "start_ticks": 1})
    (tmp_path / "stack.json").write_text(json.dumps(state))

    report = stop_recorded(tmp_path, grace_s=5.0)

    assert report.stopped == ("kafka",)
    assert report.not_running == ("falkordb",)
    assert not is_running(broker.identity)
    assert bystander.poll() is None
    assert not (tmp_path / "stack.json").exists()
    assert stack.stop() == []  # nothing left to stop; this only reaps the exited child


def test_missing_binary_fails_with_a_clear_message(tmp_path: Path) -> None:
    config = StackConfig(root=tmp_path, tansu_bin=tmp_path / "no-such-tansu", falkordb=False)
    with pytest.raises(StandInStartError, match=r"no-such-tansu does not exist") as caught:
        EmbeddedStack(config).start()
    assert caught.value.server == "kafka"
    assert processes_in(tmp_path) == []
    assert not (tmp_path / "stack.json").exists()


def test_server_that_dies_reports_its_log_and_stops_the_others(tmp_path: Path) -> None:
    fake = tmp_path / "fake-tansu"
    fake.write_text("#!/bin/sh\necho 'fatal: storage engine exploded' >&2\nexit 3\n")
    fake.chmod(0o755)
    # The broker starts first and for real; then a fake redis-server dies during its start.
    config = StackConfig(root=tmp_path, redis_server_bin=fake, falkordb_module=fake, qdrant=False)
    with pytest.raises(StandInStartError) as caught:
        EmbeddedStack(config).start()
    message = str(caught.value)
    assert caught.value.server == "falkordb"
    assert "exited (code 3)" in message
    assert "fatal: storage engine exploded" in message
    # The broker had started and answered before FalkorDB failed; it was stopped again.
    assert processes_in(tmp_path) == []
    assert not (tmp_path / "stack.json").exists()


def test_occupied_port_fails_and_leaves_nothing_running(tmp_path: Path) -> None:
    with socket.socket() as squatter:
        squatter.bind(("127.0.0.1", 0))
        squatter.listen()
        port = squatter.getsockname()[1]
        config = StackConfig(root=tmp_path, kafka_port=port, falkordb=False)
        with pytest.raises(StandInStartError, match=rf"port {port} is already in use"):
            EmbeddedStack(config).start()
    assert processes_in(tmp_path) == []
    assert not (tmp_path / "stack.json").exists()
