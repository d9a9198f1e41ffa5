"""The Trace and the embedders stay pure: no network, storage or Faust imports in their modules."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN = {"faust", "socket", "aiohttp", "httpx", "requests", "qdrant_client", "neo4j", "falkordb", "confluent_kafka"}
MODULES = sorted([*(ROOT / "processors" / "trace").glob("*.py"), *(ROOT / "processors" / "embedding").glob("*.py")])


def imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_nothing_that_does_io(path: Path) -> None:
    assert not imported_roots(path) & FORBIDDEN


def test_the_modules_were_found() -> None:
    assert {p.name for p in MODULES} >= {"builder.py", "navigate.py", "static.py", "minilm.py", "base.py"}
