"""One purity check for every ``processors/`` package: no Faust, storage clients, sockets or HTTP,
and no ``open()`` (ARCHITECTURE.md, "The rooms"). Package data goes through importlib.resources."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

IO_MODULES: Final = frozenset(
    {"faust", "mode", "socket", "aiohttp", "httpx", "requests", "confluent_kafka", "neo4j", "falkordb",
     "qdrant_client", "redis"}
)  # fmt: skip


def impurities(path: Path) -> list[str]:
    """What makes the module at ``path`` impure: each import of an I/O module and each ``open()`` call."""
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text("utf-8"), filename=str(path))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [f"{path.name} imports {name}" for name in names if name.split(".")[0] in IO_MODULES]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"{path.name} opens a file (line {node.lineno})")
    return found
