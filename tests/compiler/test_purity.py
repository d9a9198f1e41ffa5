"""The SLB, the router, the compiler and ReBAC are pure: no Faust, storage clients, network or files."""

from __future__ import annotations

from pathlib import Path

import pytest

import processors
from tests.purity import impurities

ROOT = Path(processors.__file__).parent
SOURCES = [*sorted((ROOT / "slb").glob("*.py")), *sorted((ROOT / "router").glob("*.py")),
           *sorted((ROOT / "compiler").glob("*.py")), ROOT / "rebac.py"]  # fmt: skip


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_nothing_impure_and_opens_no_file(path: Path) -> None:
    assert impurities(path) == []
