"""How each stand-in server is run: its command line and its readiness probe.

tansu keeps topics in memory (``memory://``); a stack that keeps its data (``StackConfig.keep``)
saves them on stop instead (`infra.broker_snapshot`). FalkorDB runs with persistence off
(``--save ""``, no AOF), or, for a stack that keeps its data, with RDB snapshots: on shutdown and
at Redis's default save points. RDB rather than AOF, measured (20k nodes and 20k edges, restarted):
both wrote as fast as no persistence; RDB loaded in 0.09 s, AOF replayed its queries for 159 s.
"""

from __future__ import annotations

import signal
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Final

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
    stop_grace_s: float | None = None  # how long it may take to stop cleanly; None: StackConfig's


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


# Redis's default save points (seconds, changes): a kept graph is also on disk within minutes of
# a crash, not only after a clean stop. Saving a large graph on shutdown takes a while: the stop
# waits for it rather than killing FalkorDB mid-save.
KEPT_GRAPH_SAVE_POINTS: Final = "3600 1 300 100 60 10000"
KEPT_GRAPH_STOP_GRACE_S: Final = 300.0
# A stack that keeps nothing never loads it: Redis loads its dbfilename at start whatever --save says.
KEPT_GRAPH_FILE: Final = "kept-graph.rdb"


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
        *(("--save", KEPT_GRAPH_SAVE_POINTS, "--dbfilename", KEPT_GRAPH_FILE) if config.keep else ("--save", "")),
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
        stop_grace_s=KEPT_GRAPH_STOP_GRACE_S if config.keep else None,
    )
