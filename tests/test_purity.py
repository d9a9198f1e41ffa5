"""Every module under ``engram/processors/`` is pure (ARCHITECTURE.md, "The rooms"): it imports no Faust or
Kafka client, no storage client, no socket, process or HTTP module, and no sibling room but
``engram.schemas``; and it opens no file (package data goes through ``importlib.resources``).

The scan reads each module's AST, so it sees every import, including those under ``if
TYPE_CHECKING:`` and inside functions, without importing anything."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Final

import pytest

from engram import processors

FORBIDDEN: Final = frozenset(
    {"faust", "mode", "aiokafka", "confluent_kafka", "kafka",  # stream processing and Kafka clients
     "neo4j", "falkordb", "qdrant_client", "qdrant_edge", "redis", "sqlite3",  # storage clients
     "socket", "subprocess", "urllib", "http.client", "http.server", "aiohttp", "requests", "httpx",  # network
     "engram.streams", "engram.sinks", "engram.infra", "engram.benchmarks", "tools", "tests"}  # sibling rooms
     # (engram.schemas is allowed)
)  # fmt: skip
"""Modules that ``processors/`` must not import, with their submodules (``urllib`` covers
``urllib.request``; ``http.client`` is listed alone because ``http.HTTPStatus`` is pure)."""

DYNAMIC_IMPORTS: Final = frozenset({"import_module", "__import__"})

ROOT: Final = Path(processors.__file__).resolve().parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(module: str, node: ast.ImportFrom) -> list[str]:
    """The absolute names ``from ... import ...`` in ``module`` reaches: a relative import climbs
    ``level`` packages from ``module`` (``from ..streams import x`` in ``engram.processors.m``
    reaches ``engram.streams``), and ``from package import name`` may name a submodule."""
    base = module.split(".")[: len(module.split(".")) - node.level] if node.level else []
    stem = ".".join([*base, node.module] if node.module else base)
    names = [f"{stem}.{alias.name}" for alias in node.names]
    return [stem, *names] if node.module else names


def _imported(node: ast.AST, module: str) -> list[str]:
    """The absolute module names ``node`` (in ``module``) imports, if it is an import.

    ``importlib.import_module("x")`` and ``__import__("x")`` with a literal name count as imports
    of ``x``."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        return _absolute(module, node)
    if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        if name in DYNAMIC_IMPORTS and isinstance(node.args[0].value, str):
            return [node.args[0].value]
    return []


def _forbidden(name: str) -> bool:
    return any(name == banned or name.startswith(f"{banned}.") for banned in FORBIDDEN)


def impurities(source: str, module: str) -> list[str]:
    """What makes ``source`` (the module named ``module``) impure, one line per import or ``open()``."""
    found: list[str] = []
    for node in ast.walk(ast.parse(source, filename=module)):
        if not isinstance(node, ast.stmt | ast.expr):  # the nodes that carry a line number
            continue
        banned = [name for name in _imported(node, module) if _forbidden(name)]
        banned = [name for name in banned if not any(name.startswith(f"{other}.") for other in banned)]
        found += [f"{module} imports {name} (line {node.lineno})" for name in banned]
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open":
            found.append(f"{module} opens a file (line {node.lineno})")
    return found


def processor_modules() -> dict[str, Path]:
    """Every module under ``processors/``, by dotted name."""
    paths = (path for path in ROOT.rglob("*.py") if "__pycache__" not in path.parts)
    return {_module_name(path): path for path in sorted(paths)}


def test_no_processor_module_imports_io_or_a_sibling_room() -> None:
    modules = processor_modules()
    found = [problem for name, path in modules.items() for problem in impurities(path.read_text("utf-8"), name)]
    assert found == []


def test_the_walk_reaches_every_processor_package() -> None:
    modules = processor_modules()
    packages = {path.name for path in ROOT.iterdir() if (path / "__init__.py").is_file()}
    assert packages >= {"code", "compiler", "embedding", "facts", "retrieval", "router", "slb", "trace"}
    assert {f"engram.processors.{package}" for package in packages} <= modules.keys()
    assert {
        "engram.processors",
        "engram.processors.rebac",
        "engram.processors.code.builder",
        "engram.processors.compiler.compiler",
        "engram.processors.embedding.minilm",
        "engram.processors.facts.engine",
        "engram.processors.slb.buffer",
        "engram.processors.trace.builder",
    } <= modules.keys()


@pytest.mark.parametrize(
    ("source", "problem"),
    [
        ("import socket", "m imports socket (line 1)"),
        ("import os\nimport urllib.request", "m imports urllib.request (line 2)"),
        ("from urllib.parse import quote", "m imports urllib.parse (line 1)"),
        ("from aiokafka import AIOKafkaConsumer", "m imports aiokafka (line 1)"),
        ("import qdrant_edge as qe", "m imports qdrant_edge (line 1)"),
        ("import subprocess, json", "m imports subprocess (line 1)"),
        ("from http.client import HTTPConnection", "m imports http.client (line 1)"),
        ("from engram.streams.app import app", "m imports engram.streams.app (line 1)"),
        ("from engram.benchmarks import locomo", "m imports engram.benchmarks (line 1)"),
        ("from engram import sinks", "m imports engram.sinks (line 1)"),
        ("from ...sinks import base", "m imports engram.sinks (line 1)"),
        ("from ... import infra", "m imports engram.infra (line 1)"),
        ("if TYPE_CHECKING:\n    from engram.sinks.base import Sink", "m imports engram.sinks.base (line 2)"),
        ("def f():\n    import faust", "m imports faust (line 2)"),
        ("importlib.import_module('redis')", "m imports redis (line 1)"),
        ("__import__('sqlite3')", "m imports sqlite3 (line 1)"),
        ("data = open('x').read()", "m opens a file (line 1)"),
    ],
)
def test_the_scan_names_a_forbidden_import(source: str, problem: str) -> None:
    assert impurities(source, "engram.processors.pkg.m") == [problem.replace("m ", "engram.processors.pkg.m ", 1)]


@pytest.mark.parametrize(
    "source",
    [
        "import numpy as np",
        "from engram.schemas.records import Node",
        "from engram.processors.slb import buffer",
        "from engram import schemas",
        "from ... import schemas",
        "from . import sibling",
        "from .streams import local_module",
        "import streamsx, sinkhole",
        "from http import HTTPStatus",
        "importlib.import_module(name)",
        "path.open()",
    ],
)
def test_the_scan_allows_pure_imports(source: str) -> None:
    assert impurities(source, "engram.processors.pkg.m") == []
