"""The SLB, the router, the compiler and ReBAC are pure: no Faust, storage clients, network or files."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import processors

FORBIDDEN = ("faust", "mode", "socket", "aiohttp", "httpx", "requests", "neo4j", "falkordb", "qdrant_client", "redis")
ROOT = Path(processors.__file__).parent
SOURCES = [*sorted((ROOT / "slb").glob("*.py")), *sorted((ROOT / "router").glob("*.py")),
           *sorted((ROOT / "compiler").glob("*.py")), ROOT / "rebac.py"]  # fmt: skip


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_nothing_impure_and_opens_no_file(path: Path) -> None:
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        for name in names:
            assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            assert node.func.id != "open", f"{path.name} opens a file"
