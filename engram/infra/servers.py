"""How each stand-in server is run: its command line and its readiness probe.

tansu keeps topics in memory (``memory://``), and FalkorDB runs with persistence off
(``--save ""``, no AOF): the stand-ins hold test and demo data only, and the event log is the
durable truth anyway.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from engram.infra.config import FALKORDB, KAFKA, StackConfig
from engram.infra.readiness import probe_bolt, probe_broker, probe_falkordb


@dataclass(frozen=True)
class ServerPlan:
    """One server about to be spawned. `probe()` returns None once it answers, else why not."""

    name: str
    executable: Path
    argv: tuple[str, ...]
    ports: tuple[int, ...]
    probe: Callable[[], str | None]
    ready_marker: str | None = None  # a line its log must contain before it counts as ready
    stop_signal: signal.Signals = signal.SIGTERM


def broker_plan(config: StackConfig, binary: Path, port: int) -> ServerPlan:
    url = f"tcp://{config.host}:{port}"
    bootstrap = f"{config.host}:{port}"
    argv = (
        str(binary),
        "broker",
        "--listener-url",
        url,
        "--advertised-listener-url",
        url,
        "--storage-engine",
        "memory://tansu/",
        "--cluster-id",
        "engram",
    )
    return ServerPlan(
        name=KAFKA,
        executable=binary,
        argv=argv,
        ports=(port,),
        probe=lambda: probe_broker(bootstrap, config.probe_timeout_s, write_check=True),
        # Measured: on SIGTERM tansu waits for every client to disconnect (a test's producer can
        # keep it up forever); SIGINT stops it at once, and its memory storage has nothing to flush.
        stop_signal=signal.SIGINT,
    )


def falkordb_plan(
    config: StackConfig, server: Path, module: Path, data_dir: Path, port: int, bolt_port: int | None
) -> ServerPlan:
    module_args: tuple[str, ...] = () if bolt_port is None else ("BOLT_PORT", str(bolt_port))
    argv = (
        str(server),
        "--port",
        str(port),
        "--bind",
        config.host,
        "--dir",
        str(data_dir),
        "--save",
        "",
        "--appendonly",
        "no",
        "--daemonize",
        "no",
        "--loadmodule",
        str(module),
        *module_args,
    )
    host = config.host
    timeout = config.probe_timeout_s

    def probe() -> str | None:
        reason = probe_falkordb(host, port, timeout)
        if reason is None and bolt_port is not None:
            reason = probe_bolt(host, bolt_port, timeout)
        return reason

    return ServerPlan(
        name=FALKORDB,
        executable=server,
        argv=argv,
        ports=(port,) if bolt_port is None else (port, bolt_port),
        probe=probe,
        # FalkorDB only logs, and keeps running, when its Bolt port is taken: the marker proves
        # that this process, not another one on that port, serves Bolt.
        ready_marker=None if bolt_port is None else f"Bolt protocol initialized. Port: {bolt_port}",
    )
