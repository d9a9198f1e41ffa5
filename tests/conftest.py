"""Shared fixtures. The stand-ins start once per session through the same launcher as
``engram up`` and the demo (`infra.launcher.EmbeddedStack`), on free ports, under a temporary
root, and stop at the end of the session. A stand-in that cannot start FAILS the tests that
need it, with the launcher's reason and the server's log tail; nothing is skipped.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import neo4j
import pytest

from infra.config import FULL_STACK, StackInfo
from infra.errors import StandInError
from infra.launcher import EmbeddedStack
from infra.standins import standin_neo4j_driver_settings


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackInfo]:
    """tansu broker + FalkorDB (with Bolt) + a Qdrant folder, for the whole session."""
    root = tmp_path_factory.mktemp("stack")
    launcher = EmbeddedStack(replace(FULL_STACK, root=root))
    try:
        info = launcher.start()
    except StandInError as exc:
        pytest.fail(f"the embedded stand-ins did not start: {exc}", pytrace=False)
    try:
        yield info
    finally:
        launcher.stop()


@pytest.fixture(scope="session")
def bolt_driver(stack: StackInfo) -> Iterator[neo4j.Driver]:
    """ONE neo4j driver on FalkorDB's Bolt port for the whole session.

    Reconnecting to that port hangs every other new connection (measured; see
    `infra.standins.standin_neo4j_driver_settings`), so tests share this driver rather than
    opening their own. Smoke tests only: FalkorDB's Bolt crashes on requests over ~4 KB.
    """
    driver = neo4j.GraphDatabase.driver(stack.require_bolt_url(), auth=None, **standin_neo4j_driver_settings())
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name unique to this test, usable as a topic, group, app id, graph or folder name.

    Lowercase letters, digits and '-': the test's name plus a short hash of its full node id
    (so equal test names in different modules, and parametrized cases, differ).
    """
    node_id: str = request.node.nodeid
    slug = re.sub(r"[^a-z0-9]+", "-", str(request.node.name).lower()).strip("-")[:40].strip("-")
    digest = hashlib.sha256(node_id.encode()).hexdigest()[:8]
    return f"{slug or 't'}-{digest}"


@pytest.fixture
def qdrant_folder(tmp_path: Path) -> Path:
    """A fresh folder for one in-process Qdrant engine (`qdrant-edge-py`).

    Each engine takes a single-process lock on its folder; nothing has to be started for it,
    so this needs no `stack`.
    """
    folder = tmp_path / "qdrant"
    folder.mkdir()
    return folder
