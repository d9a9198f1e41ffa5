"""Checking and stopping a recorded stack from another process (``engram status``/``down``).

Only the processes named in ``<root>/stack.json`` are ever signalled, and only while their pid,
start time and executable still match what was recorded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engram.infra import processes
from engram.infra.broker_snapshot import BrokerSnapshotError, SaveReport, save_broker
from engram.infra.config import FALKORDB, KAFKA, StackInfo
from engram.infra.readiness import probe_bolt, probe_broker, probe_falkordb
from engram.infra.state import ServerRecord, read_state, remove_state


@dataclass(frozen=True)
class ServerStatus:
    name: str
    pid: int
    ports: tuple[int, ...]
    running: bool
    ready: bool
    reason: str | None
    log_path: str

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "pid": self.pid,
            "ports": list(self.ports),
            "running": self.running,
            "ready": self.ready,
            "reason": self.reason,
            "log_path": self.log_path,
        }


@dataclass(frozen=True)
class StackStatus:
    """What `stack_status` found. `info` is None when no stack is recorded under the root."""

    root: Path
    info: StackInfo | None
    servers: tuple[ServerStatus, ...]
    started_at: str | None

    @property
    def healthy(self) -> bool:
        return self.info is not None and all(s.running and s.ready for s in self.servers)

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "healthy": self.healthy,
            "started_at": self.started_at,
            "info": None if self.info is None else self.info.to_json(),
            "servers": [s.to_json() for s in self.servers],
        }


@dataclass(frozen=True)
class StopReport:
    """`stopped`: names signalled and gone. `not_running`: recorded but already gone or pid reused.
    `saved`: what was saved of the broker first (a stack that keeps its data), else None."""

    stopped: tuple[str, ...]
    not_running: tuple[str, ...]
    had_state: bool
    saved: SaveReport | None = None


def stack_status(root: Path, probe_timeout_s: float = 2.0) -> StackStatus:
    root = root.resolve()
    state = read_state(root / "stack.json")
    if state is None:
        return StackStatus(root=root, info=None, servers=(), started_at=None)
    servers = tuple(_server_status(record, state.info, probe_timeout_s) for record in state.servers)
    return StackStatus(root=root, info=state.info, servers=servers, started_at=state.started_at)


def stop_recorded(
    root: Path, grace_s: float = 5.0, *, save: bool = True, snapshot_timeout_s: float = 600.0
) -> StopReport:
    """Stop the servers recorded under `root` (newest first) and remove the state file.

    A stack that keeps its data has the broker's contents saved first (unless ``save`` is False);
    when that fails, `BrokerSnapshotError` is raised and nothing is stopped."""
    root = root.resolve()
    state_file = root / "stack.json"
    state = read_state(state_file)
    if state is None:
        return StopReport(stopped=(), not_running=(), had_state=False)
    saved: SaveReport | None = None
    broker = next((r for r in state.servers if r.name == KAFKA), None)
    bootstrap = state.info.bootstrap_servers
    if save and state.keep and broker is not None and bootstrap is not None and processes.is_running(broker.identity):
        try:
            saved = save_broker(bootstrap, root, snapshot_timeout_s)
        except BrokerSnapshotError as exc:
            msg = f"{exc}; nothing was stopped (`engram down --no-save` stops the stack without saving)"
            raise BrokerSnapshotError(msg) from exc
    stopped: list[str] = []
    gone: list[str] = []
    for record in reversed(state.servers):
        grace = record.stop_grace_s or grace_s
        (stopped if processes.stop(record.identity, grace, None, record.stop_signum) else gone).append(record.name)
    remove_state(state_file)
    return StopReport(stopped=tuple(stopped), not_running=tuple(gone), had_state=True, saved=saved)


def _server_status(record: ServerRecord, info: StackInfo, timeout_s: float) -> ServerStatus:
    running = processes.is_running(record.identity)
    reason: str | None = "the recorded process is not running" if not running else _probe(record, info, timeout_s)
    return ServerStatus(
        name=record.name,
        pid=record.pid,
        ports=record.ports,
        running=running,
        ready=running and reason is None,
        reason=reason,
        log_path=record.log_path,
    )


def _probe(record: ServerRecord, info: StackInfo, timeout_s: float) -> str | None:
    if record.name == KAFKA and info.bootstrap_servers is not None:
        return probe_broker(info.bootstrap_servers, timeout_s)
    if record.name == FALKORDB and info.falkordb_host is not None and info.falkordb_port is not None:
        reason = probe_falkordb(info.falkordb_host, info.falkordb_port, timeout_s)
        if reason is None and info.bolt_url is not None:
            host, _, port = info.bolt_url.removeprefix("bolt://").rpartition(":")
            reason = probe_bolt(host, int(port), timeout_s)
        return reason
    return f"no probe for server {record.name!r}"


def running_stack(root: Path) -> StackInfo | None:
    """The stack recorded under ``root`` when every server it recorded still runs; None when none
    is recorded or any is gone (a stale state file is never taken for a running stack).
    Raises `StandInStateError` for an unreadable state file."""
    state = read_state(root / "stack.json")
    if state is None or not all(processes.is_running(record.identity) for record in state.servers):
        return None
    return state.info
