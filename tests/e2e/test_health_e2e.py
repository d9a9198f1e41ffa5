"""Issue 18: `/health` answers while the worker lives; `/ready` once it may be sent work."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from infra.config import StackInfo
from streams.admin import ensure_topics
from streams.runner import WorkerProcess
from tests.e2e.support import standin_config

pytestmark = pytest.mark.e2e


def test_health_then_ready(stack: StackInfo, tmp_path: Path, unique_name: str) -> None:
    config = standin_config(stack, tmp_path, unique_name)
    ensure_topics(config.bootstrap_servers, config.topics.every, config.partitions)
    with WorkerProcess(config, tmp_path / "worker.log", topic_prefix=unique_name) as worker:
        health = worker.page("/health")
        assert health is not None and json.loads(health) == {"live": True}
        deadline = time.monotonic() + 30
        ready = worker.page("/ready")
        while ready is None and time.monotonic() < deadline:  # 503 until recovery finished
            time.sleep(0.5)
            ready = worker.page("/ready")
        assert ready is not None, "the worker never became ready"
        assert json.loads(ready) == {"ready": True, "broker": True, "stores": True, "tables_recovered": True}
