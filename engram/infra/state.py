"""The launcher's state file (``<root>/stack.json``): what it started, so that another process
(``engram status``, ``engram down``) can check and stop exactly those servers.

Written atomically (temporary file, then rename), so a reader never sees half a file.
"""

from __future__ import annotations

import json
import os
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

from engram.infra.config import StackInfo
from engram.infra.errors import StandInStateError
from engram.infra.processes import ProcessIdentity

STATE_VERSION: Final = 1


@dataclass(frozen=True)
class ServerRecord:
    """One spawned server. `started_at` is ISO-8601 UTC; `ports` are the TCP ports it serves."""

    name: str
    pid: int
    executable: str
    start_ticks: int | None
    argv: tuple[str, ...]
    ports: tuple[int, ...]
    log_path: str
    started_at: str
    stop_signal: str = "SIGTERM"  # the signal name that stops it cleanly
    stop_grace_s: float | None = None  # seconds it may take to stop cleanly; None: the caller's

    @property
    def stop_signum(self) -> signal.Signals:
        return signal.Signals[self.stop_signal]

    @property
    def identity(self) -> ProcessIdentity:
        return ProcessIdentity(pid=self.pid, executable=self.executable, start_ticks=self.start_ticks)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.pid,
            "executable": self.executable,
            "start_ticks": self.start_ticks,
            "argv": list(self.argv),
            "ports": list(self.ports),
            "log_path": self.log_path,
            "started_at": self.started_at,
            "stop_signal": self.stop_signal,
            "stop_grace_s": self.stop_grace_s,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> ServerRecord:
        ticks = data.get("start_ticks")
        return cls(
            name=str(data["name"]),
            pid=int(data["pid"]),
            executable=str(data["executable"]),
            start_ticks=None if ticks is None else int(ticks),
            argv=tuple(str(a) for a in data["argv"]),
            ports=tuple(int(p) for p in data["ports"]),
            log_path=str(data["log_path"]),
            started_at=str(data["started_at"]),
            stop_signal=str(data.get("stop_signal", "SIGTERM")),
            stop_grace_s=None if data.get("stop_grace_s") is None else float(data["stop_grace_s"]),
        )


@dataclass(frozen=True)
class StackState:
    """``keep``: the stack keeps its data across a stop (`StackConfig.keep`): stopping it saves the
    broker's contents first."""

    info: StackInfo
    servers: tuple[ServerRecord, ...]
    started_at: str
    keep: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "version": STATE_VERSION,
            "keep": self.keep,
            "started_at": self.started_at,
            "info": self.info.to_json(),
            "servers": [s.to_json() for s in self.servers],
        }


def write_state(path: Path, state: StackState) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state.to_json(), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def read_state(path: Path) -> StackState | None:
    """The recorded state, or None when no stack was started under this root."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    try:
        data = json.loads(text)
        if data.get("version") != STATE_VERSION:
            msg = f"unsupported state version {data.get('version')!r}"
            raise ValueError(msg)
        return StackState(
            info=StackInfo.from_json(data["info"]),
            servers=tuple(ServerRecord.from_json(s) for s in data["servers"]),
            started_at=str(data["started_at"]),
            keep=bool(data.get("keep", False)),
        )
    except (ValueError, KeyError, TypeError) as exc:
        msg = f"unreadable state file {path}: {exc}"
        raise StandInStateError(msg) from exc


def remove_state(path: Path) -> None:
    path.unlink(missing_ok=True)
