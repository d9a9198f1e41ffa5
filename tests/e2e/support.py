"""What every end-to-end test needs to run a worker against the stand-ins."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from infra.config import StackInfo
from streams.config import EngramConfig
from streams.demo import free_port


def standin_config(stack: StackInfo, root: Path, name: str, **overrides: Any) -> EngramConfig:
    """A worker config on the stand-ins with per-test topics (prefix ``name``), app id and data folder.

    ``overrides`` set any other field (partitions, FalkorDB, batch size, ...).
    """
    config = EngramConfig(
        bootstrap_servers=stack.require_bootstrap_servers(),
        app_id=f"e2e-{name}",
        topics=EngramConfig().topics.prefixed(name),
        partitions=2,
        data_dir=root / "data",
        web_port=free_port(),
        standin=True,
        batch_within_s=0.1,
    )
    return replace(config, **overrides)
