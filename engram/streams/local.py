"""Zero-config local use: the commands find the stand-ins `engram up` left running.

`local_config` builds the `EngramConfig` of `EngramConfig.from_env` from three layers, the first
that sets a variable winning: the flags a command was given, the environment, then the running
stack recorded in ``<ENGRAM_DATA_DIR>/stack.json`` (``.engram/stack.json`` by default, where
`engram up` writes it): its broker (with the stand-in broker profile) and its FalkorDB. No stack
running (none recorded, or a server it recorded is gone): `from_env` alone, after a note on stderr
when a stale record was found.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path

from engram.infra.control import running_stack
from engram.infra.errors import StandInError
from engram.streams.config import EngramConfig

BOOTSTRAP: str = "ENGRAM_BOOTSTRAP_SERVERS"


def stack_environment(root: Path) -> dict[str, str] | None:
    """The ENGRAM_* settings of the stack running under ``root``; {} when none is recorded, None
    when one is recorded but not running (or its record cannot be read)."""
    try:
        info = running_stack(root)
    except StandInError:
        return None
    if info is None:
        return None if (root / "stack.json").exists() else {}
    found: dict[str, str] = {}
    if info.bootstrap_servers is not None:
        found |= {BOOTSTRAP: info.bootstrap_servers, "ENGRAM_BROKER_PROFILE": "standin"}
    if info.falkordb_host is not None and info.falkordb_port is not None:
        found |= {"ENGRAM_FALKORDB_HOST": info.falkordb_host, "ENGRAM_FALKORDB_PORT": str(info.falkordb_port)}
    return found


def local_config(env: Mapping[str, str], flags: Mapping[str, str | None] | None = None) -> EngramConfig:
    """The config of a command: ``flags`` (ENGRAM_* names; None: not given) over ``env`` over the
    running stack's settings (see the module docstring)."""
    given = {**env, **{name: value for name, value in (flags or {}).items() if value is not None}}
    root = Path(given.get("ENGRAM_DATA_DIR") or EngramConfig().data_dir)
    found = stack_environment(root)
    if found is None:
        print(f"engram: {root / 'stack.json'} records stand-ins that are not running (`engram up` starts them)",
              file=sys.stderr)  # fmt: skip
        found = {}
    if BOOTSTRAP in given or "ENGRAM_STANDIN" in given:  # the stand-in profile goes with the stand-in broker
        found.pop("ENGRAM_BROKER_PROFILE", None)
    return EngramConfig.from_env({**found, **given})


def add_broker_flag(parser: argparse.ArgumentParser) -> None:
    """``--bootstrap HOST:PORT``: over ``ENGRAM_BOOTSTRAP_SERVERS`` and the running stack."""
    parser.add_argument("--bootstrap", default=None, metavar="HOST:PORT",
                        help="Kafka bootstrap servers (default: ENGRAM_BOOTSTRAP_SERVERS, else the stack `engram up` "
                             "started, else 127.0.0.1:9092)")  # fmt: skip


def command_config(env: Mapping[str, str], args: argparse.Namespace) -> EngramConfig:
    """`local_config` with the command's ``--bootstrap`` flag, when it has one."""
    return local_config(env, {BOOTSTRAP: getattr(args, "bootstrap", None)})
