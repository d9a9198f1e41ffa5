"""``processors/code`` is pure: no Faust, storage clients, sockets or HTTP, and no file I/O calls."""

from __future__ import annotations

from pathlib import Path

import processors.code
from tests.purity import impurities


def test_the_code_brain_imports_nothing_impure() -> None:
    paths = sorted(Path(processors.code.__file__).parent.glob("*.py"))
    assert len(paths) > 5
    assert [problem for path in paths for problem in impurities(path)] == []
