"""The one launcher for the embedded stand-ins (ARCHITECTURE.md, "Servers").

It starts the tansu broker and FalkorDB (optionally with its Bolt port) on free ports, waits
until each answers over its own protocol, provides a data folder for in-process Qdrant engines,
and records every process it spawned in ``<root>/stack.json``. Stopping kills only those recorded
processes (checked by pid, start time and executable). If anything fails to start, everything it
had started is stopped again and `StandInStartError` says why, with the tail of the server's log.
A stack that keeps its data (``StackConfig.keep``, as ``engram up`` starts it) puts the broker's
saved contents back before it counts as started, and saves them before its broker stops.

    with EmbeddedStack(StackConfig(root=tmp, bolt=True)) as info:
        produce_to(info.require_bootstrap_servers())

The demo, ``engram up`` and the test fixtures all start the stand-ins through this class.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Final

from engram.infra import processes
from engram.infra.binaries import falkordb_binaries, tansu_binary
from engram.infra.broker_snapshot import RestoreReport, SaveReport, has_snapshot, restore_broker, save_broker
from engram.infra.config import BOLT_PORT_RANGE, DEMO_STACK, FALKORDB, KAFKA, StackConfig, StackInfo
from engram.infra.errors import StandInStartError, StandInStateError
from engram.infra.servers import ServerPlan, broker_plan, falkordb_plan
from engram.infra.state import ServerRecord, StackState, read_state, remove_state, write_state

_READY_POLL_S: Final = 0.1
_ANY_HOST: Final = "0.0.0.0"  # noqa: S104 -- only to test whether FalkorDB's Bolt port (bound on all interfaces) is free


class EmbeddedStack:
    """Starts, records and stops one set of stand-ins under one root folder.

    Not thread-safe; one instance per root. `start` refuses to run when the state file of the
    same root still names live servers (``engram down`` first).
    """

    def __init__(self, config: StackConfig = DEMO_STACK) -> None:
        self._config = config
        self._root = config.root.resolve()
        self._children: dict[str, subprocess.Popen[bytes]] = {}
        self._records: list[ServerRecord] = []
        self._started_at = ""
        self._bootstrap: str | None = None
        self._falkordb_port: int | None = None
        self._bolt_port: int | None = None
        self._qdrant_path: Path | None = None
        self._info: StackInfo | None = None
        self.restored: RestoreReport | None = None  # what `start` put back into the broker
        self.saved: SaveReport | None = None  # what `stop` saved of it
        self.unclean_stop = False  # `start` found the last stack under this root gone, not stopped

    @property
    def info(self) -> StackInfo:
        if self._info is None:
            msg = "the stack is not started"
            raise StandInStateError(msg)
        return self._info

    @property
    def records(self) -> tuple[ServerRecord, ...]:
        return tuple(self._records)

    @property
    def state_file(self) -> Path:
        return self._root / "stack.json"

    def start(self) -> StackInfo:
        if self._info is not None or self._records:
            msg = "this stack is already started"
            raise StandInStateError(msg)
        self._root.mkdir(parents=True, exist_ok=True)
        self._refuse_live_stack()
        self._started_at = datetime.now(tz=UTC).isoformat()
        try:
            if self._config.kafka:
                self._start_broker()
                if self._config.keep and has_snapshot(self._root) and self._bootstrap is not None:
                    self.restored = restore_broker(self._bootstrap, self._root, self._config.snapshot_timeout_s)
            if self._config.falkordb:
                self._start_falkordb()
            if self._config.qdrant:
                self._qdrant_path = self._root / "qdrant"
                self._qdrant_path.mkdir(parents=True, exist_ok=True)
            self._info = self._current_info()
            self._write_state()
        except BaseException:
            self.stop()
            raise
        return self._info

    def stop(self) -> list[str]:
        """Stop every server this instance started (newest first). Returns the names stopped.

        A stack that keeps its data saves the broker's contents first (`saved`); the servers are
        stopped even when that fails, and the error is raised after."""
        failure: Exception | None = None
        if self._config.keep and self._info is not None and self._bootstrap is not None:
            try:
                self.saved = save_broker(self._bootstrap, self._root, self._config.snapshot_timeout_s)
            except Exception as exc:  # raised again once the servers are stopped
                failure = exc
        stopped: list[str] = []
        for record in reversed(self._records):
            child = self._children.pop(record.name, None)
            grace = record.stop_grace_s or self._config.stop_grace_s
            if processes.stop(record.identity, grace, child, record.stop_signum):
                stopped.append(record.name)
        self._remove_own_state()
        self._records.clear()
        self._info = None
        if failure is not None:
            raise failure
        return stopped

    def detach(self) -> StackInfo:
        """Leave the servers running after this process exits; the state file keeps their PIDs.

        For a process that exits right after (``engram up``): the child handles are dropped, so
        ``engram down`` (`infra.control.stop_recorded`) is what stops them.
        """
        info = self.info
        self._children.clear()
        self._records.clear()
        self._info = None
        return info

    def __enter__(self) -> StackInfo:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    def _refuse_live_stack(self) -> None:
        state = read_state(self.state_file)
        if state is None:
            return
        live = [s for s in state.servers if processes.is_running(s.identity)]
        if live:
            names = ", ".join(f"{s.name} (pid {s.pid})" for s in live)
            msg = f"a stack is already running under {self._root}: {names}; stop it with `engram down`"
            raise StandInStateError(msg)
        self.unclean_stop = bool(state.servers)
        remove_state(self.state_file)

    def _start_broker(self) -> None:
        binary = tansu_binary(self._config.tansu_bin)
        fixed = self._config.kafka_port

        def plan() -> ServerPlan:
            port = fixed if fixed is not None else processes.free_port(self._config.host)
            return broker_plan(self._config, binary, port)

        started = self._launch(KAFKA, plan, fixed_ports=fixed is not None)
        self._bootstrap = f"{self._config.host}:{started.ports[0]}"

    def _start_falkordb(self) -> None:
        server, module = falkordb_binaries(self._config.redis_server_bin, self._config.falkordb_module)
        data_dir = self._root / "falkordb"
        data_dir.mkdir(parents=True, exist_ok=True)
        cfg = self._config

        def plan() -> ServerPlan:
            port = cfg.falkordb_port if cfg.falkordb_port is not None else processes.free_port(cfg.host)
            bolt: int | None = cfg.bolt_port
            if cfg.bolt and bolt is None:
                bolt = processes.free_port_in(_ANY_HOST, *BOLT_PORT_RANGE)
            return falkordb_plan(cfg, server, module, data_dir, port, bolt)

        fixed = cfg.falkordb_port is not None or (cfg.bolt and cfg.bolt_port is not None)
        started = self._launch(FALKORDB, plan, fixed_ports=fixed)
        self._falkordb_port = started.ports[0]
        self._bolt_port = started.ports[1] if len(started.ports) > 1 else None

    def _launch(self, name: str, make_plan: Callable[[], ServerPlan], *, fixed_ports: bool) -> ServerPlan:
        """Spawn one server and wait until it answers, choosing new free ports on a lost race."""
        attempts = 1 if fixed_ports else self._config.port_attempts
        log_path = self._root / "logs" / f"{name}.log"
        for attempt in range(1, attempts + 1):
            plan = make_plan()
            busy = [p for p in plan.ports if not self._port_free(plan, p)]
            if busy:
                if attempt < attempts:
                    continue
                msg = f"port {', '.join(map(str, busy))} is already in use on {self._config.host}"
                raise StandInStartError(name, msg)
            child = self._spawn(plan, log_path)
            reason = self._await_ready(plan, child, log_path)
            if reason is None:
                return plan
            tail = processes.log_tail(log_path)
            lost_race = child.poll() is not None and "in use" in tail.lower()
            self._forget(name, stop=True)
            if not (lost_race and attempt < attempts):
                raise StandInStartError(name, reason, tail)
        msg = f"no free port after {attempts} attempts"
        raise StandInStartError(name, msg)

    def _port_free(self, plan: ServerPlan, port: int) -> bool:
        bolt = plan.name == FALKORDB and len(plan.ports) > 1 and port == plan.ports[1]
        return processes.port_is_free(_ANY_HOST if bolt else self._config.host, port)

    def _spawn(self, plan: ServerPlan, log_path: Path) -> subprocess.Popen[bytes]:
        log_path.unlink(missing_ok=True)
        try:
            child = processes.spawn(plan.argv, log_path, cwd=self._root)
        except OSError as exc:
            msg = f"cannot execute {plan.executable}: {exc}"
            raise StandInStartError(plan.name, msg) from exc
        identity = processes.identify(child.pid, str(plan.executable))
        self._children[plan.name] = child
        self._records.append(
            ServerRecord(
                name=plan.name,
                pid=child.pid,
                executable=identity.executable,
                start_ticks=identity.start_ticks,
                argv=plan.argv,
                ports=plan.ports,
                log_path=str(log_path),
                started_at=datetime.now(tz=UTC).isoformat(),
                stop_signal=plan.stop_signal.name,
                stop_grace_s=plan.stop_grace_s,
            )
        )
        # Recorded before the readiness wait: if this process dies now, `engram down` still
        # finds the server.
        self._write_state()
        return child

    def _await_ready(self, plan: ServerPlan, child: subprocess.Popen[bytes], log_path: Path) -> str | None:
        timeout = self._config.start_timeout_s
        deadline = time.monotonic() + timeout
        reason = "it was never probed"
        while time.monotonic() < deadline:
            code = child.poll()
            if code is not None:
                return f"the process exited (code {code}) before it was ready"
            if plan.ready_marker is not None and plan.ready_marker not in processes.log_tail(log_path, 200):
                reason = f"its log never said {plan.ready_marker!r}"
            else:
                probed = plan.probe()
                if probed is None:
                    return None
                reason = probed
            time.sleep(_READY_POLL_S)
        return f"not ready after {timeout:g} s: {reason}"

    def _forget(self, name: str, *, stop: bool) -> None:
        for record in [r for r in self._records if r.name == name]:
            child = self._children.pop(name, None)
            if stop:
                grace = record.stop_grace_s or self._config.stop_grace_s
                processes.stop(record.identity, grace, child, record.stop_signum)
            self._records.remove(record)
        self._write_state()

    def _current_info(self) -> StackInfo:
        falkordb = self._falkordb_port is not None
        return StackInfo(
            root=self._root,
            bootstrap_servers=self._bootstrap,
            falkordb_host=self._config.host if falkordb else None,
            falkordb_port=self._falkordb_port,
            bolt_url=None if self._bolt_port is None else f"bolt://{self._config.host}:{self._bolt_port}",
            qdrant_path=self._qdrant_path,
        )

    def _write_state(self) -> None:
        # Marked as keeping its data only once started: a stack stopped mid-restore must not save a
        # half-restored broker over the snapshot it came from.
        keep = self._config.keep and self._info is not None
        state = StackState(
            info=self._current_info(), servers=tuple(self._records), started_at=self._started_at, keep=keep
        )
        write_state(self.state_file, state)

    def _remove_own_state(self) -> None:
        try:
            state = read_state(self.state_file)
        except StandInStateError:
            return
        own = {(r.pid, r.start_ticks) for r in self._records}
        if state is not None and {(s.pid, s.start_ticks) for s in state.servers} <= own:
            remove_state(self.state_file)
