"""``processors/code`` is pure: no Faust, storage clients, sockets or HTTP, and no file I/O calls."""

from __future__ import annotations

import ast
from pathlib import Path

import processors.code

FORBIDDEN = ("faust", "mode", "socket", "aiohttp", "httpx", "requests", "neo4j", "falkordb", "qdrant_client", "redis")


def test_the_code_brain_imports_nothing_impure() -> None:
    package = Path(processors.code.__file__).parent
    for path in package.glob("*.py"):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            for name in names:
                assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                assert node.func.id != "open", f"{path.name} opens a file"
