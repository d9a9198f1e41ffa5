"""The Trace and the embedders stay pure: no network, storage or Faust imports in their modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.purity import impurities

ROOT = Path(__file__).resolve().parents[2]
MODULES = sorted([*(ROOT / "processors" / "trace").glob("*.py"), *(ROOT / "processors" / "embedding").glob("*.py")])


@pytest.mark.parametrize("path", MODULES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_module_imports_nothing_that_does_io(path: Path) -> None:
    assert impurities(path) == []


def test_the_modules_were_found() -> None:
    assert {p.name for p in MODULES} >= {"builder.py", "navigate.py", "static.py", "minilm.py", "base.py"}
