"""Launcher configuration and state file, without starting anything (the stand-in client settings:
tests/streams/test_profile.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from engram.infra.config import StackConfig, StackInfo
from engram.infra.errors import StandInStartError, StandInStateError
from engram.infra.state import ServerRecord, StackState, read_state, write_state


def test_config_rejects_impossible_combinations() -> None:
    with pytest.raises(ValueError, match="needs falkordb"):
        StackConfig(bolt=True, falkordb=False)
    with pytest.raises(ValueError, match="above 32767"):
        StackConfig(bolt=True, bolt_port=40000)
    with pytest.raises(ValueError, match="positive"):
        StackConfig(start_timeout_s=0)


def test_info_names_what_was_not_started(tmp_path: Path) -> None:
    info = StackInfo(root=tmp_path, bootstrap_servers="127.0.0.1:9")
    assert info.require_bootstrap_servers() == "127.0.0.1:9"
    with pytest.raises(LookupError, match="FalkorDB was not started"):
        info.require_falkordb()
    with pytest.raises(LookupError, match="Bolt"):
        info.require_bolt_url()
    with pytest.raises(LookupError, match="Qdrant"):
        info.qdrant_folder("x")


def test_qdrant_folder_names_cannot_escape_the_root(tmp_path: Path) -> None:
    info = StackInfo(root=tmp_path, qdrant_path=tmp_path / "qdrant")
    for bad in ("../outside", "a/b", "", ".hidden"):
        with pytest.raises(ValueError, match="invalid Qdrant folder name"):
            info.qdrant_folder(bad)
    assert info.qdrant_folder("sink-1") == tmp_path / "qdrant" / "sink-1"


def test_state_round_trips_and_a_corrupt_file_is_a_typed_error(tmp_path: Path) -> None:
    info = StackInfo(
        root=tmp_path,
        bootstrap_servers="127.0.0.1:1",
        falkordb_host="127.0.0.1",
        falkordb_port=2,
        bolt_url="bolt://127.0.0.1:3",
        qdrant_path=tmp_path / "qdrant",
    )
    when = "2026-01-01T00:00:00+00:00"
    record = ServerRecord("kafka", 42, "/bin/tansu", 7, ("/bin/tansu", "broker"), (1,), "k.log", when)
    state = StackState(info=info, servers=(record,), started_at=when)
    path = tmp_path / "stack.json"
    write_state(path, state)
    assert read_state(path) == state
    assert read_state(tmp_path / "absent.json") is None
    path.write_text('{"version": 1, "servers": [')
    with pytest.raises(StandInStateError, match="unreadable state file"):
        read_state(path)


def test_start_error_message_carries_the_log_tail() -> None:
    error = StandInStartError("kafka", "the process exited (code 3)", "line one\nAddress in use")
    assert str(error).startswith("stand-in 'kafka' failed to start: the process exited (code 3)")
    assert str(error).endswith("Address in use")
