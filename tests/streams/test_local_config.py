"""Zero-config local use: the commands take the broker and FalkorDB of the stack `engram up` left
running (``.engram/stack.json``); the environment and flags override it; a stale record is not used."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import pytest

from engram.infra.config import StackInfo
from engram.infra.processes import identify
from engram.infra.state import ServerRecord, StackState, write_state
from engram.streams.local import add_broker_flag, command_config, local_config


def record(root: Path, pid: int, start_ticks: int | None) -> None:
    info = StackInfo(root, bootstrap_servers="127.0.0.1:39092", falkordb_host="127.0.0.1", falkordb_port=36379)
    server = ServerRecord("kafka", pid, sys.executable, start_ticks, ("tansu",), (39092,), "kafka.log", "now")
    write_state(root / "stack.json", StackState(info, (server,), "now"))


@pytest.fixture
def running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A stack recorded under ``.engram`` of the working folder, its server this very process."""
    monkeypatch.chdir(tmp_path)
    record(tmp_path / ".engram", os.getpid(), identify(os.getpid(), sys.executable).start_ticks)
    return tmp_path / ".engram"


def test_with_no_setting_the_running_stack_is_used(running: Path) -> None:
    config = local_config({})
    assert config.bootstrap_servers == "127.0.0.1:39092" and config.broker_profile == "standin"
    assert (config.falkordb_host, config.falkordb_port) == ("127.0.0.1", 36379)


def test_the_environment_and_then_a_flag_win_over_the_stack(running: Path) -> None:
    env = {"ENGRAM_BOOTSTRAP_SERVERS": "kafka:9092"}
    config = local_config(env)
    assert config.bootstrap_servers == "kafka:9092" and config.broker_profile == "kafka", "no stand-in profile"
    assert config.falkordb_port == 36379
    parser = argparse.ArgumentParser()
    add_broker_flag(parser)
    assert command_config(env, parser.parse_args(["--bootstrap", "other:9093"])).bootstrap_servers == "other:9093"
    assert command_config(env, parser.parse_args([])).bootstrap_servers == "kafka:9092"


def test_the_stack_is_found_under_the_data_folder(tmp_path: Path) -> None:
    record(tmp_path / "mine", os.getpid(), identify(os.getpid(), sys.executable).start_ticks)
    assert local_config({"ENGRAM_DATA_DIR": str(tmp_path / "mine")}).bootstrap_servers == "127.0.0.1:39092"


def test_a_stale_record_is_not_used_and_says_so(running: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = json.loads((running / "stack.json").read_text())
    state["servers"][0]["start_ticks"] += 1  # the pid is reused by another process
    (running / "stack.json").write_text(json.dumps(state))
    config = local_config({})
    assert config.bootstrap_servers == "127.0.0.1:9092" and config.falkordb_host is None
    assert "not running" in capsys.readouterr().err


def test_without_a_stack_the_defaults_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert local_config({}).bootstrap_servers == "127.0.0.1:9092"
