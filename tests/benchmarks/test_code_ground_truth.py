"""Ground truth on code nobody here wrote: the installed ``faust`` package against Python's ``ast``."""

from __future__ import annotations

import importlib.metadata
from pathlib import Path

from engram.benchmarks.code_ground_truth import ast_items, compare_python, symbol_items
from engram.processors.code.extract import extract

DISTRIBUTIONS = {"faust": "faust-streaming"}


def installed(package: str) -> Path:
    """The package's folder. Found from its distribution's files, not `find_spec`: Faust replaces
    its module in ``sys.modules`` with one that has no ``__spec__`` once another test imported it."""
    init = next(
        (f for f in importlib.metadata.files(DISTRIBUTIONS[package]) or () if str(f) == f"{package}/__init__.py"), None
    )
    assert init is not None, f"{package} is not installed in this environment"
    return Path(str(init.locate())).parent


def test_faust_classes_bases_methods_and_imports_agree_with_ast() -> None:
    root = installed("faust")
    files = sorted(root.rglob("*.py"))
    assert len(files) > 100  # the real package, about 43k lines
    result = compare_python((p.relative_to(root.parent).as_posix(), p.read_text("utf-8")) for p in files)
    assert result.files == len(files) and not result.skipped
    assert result.items > 5000
    assert result.ratio >= 0.99, (result.only_ast[:10], result.only_tree_sitter[:10])


def test_items_cover_nesting_conditional_methods_and_star_imports() -> None:
    source = """\
from .x import *
import a.b as c


class Outer(Base[int], mixins.Mixin):
    if FLAG:
        def maybe(self) -> None: ...

    class Inner:
        async def run(self) -> None:
            def local() -> None: ...
"""
    expected = {
        ("import", "pkg.mod", ".x:*"),
        ("import", "pkg.mod", "a.b"),
        ("class", "pkg.mod", "pkg.mod.Outer"),
        ("base", "pkg.mod.Outer", "Base[int]"),
        ("base", "pkg.mod.Outer", "mixins.Mixin"),
        ("method", "pkg.mod.Outer", "maybe"),
        ("class", "pkg.mod", "pkg.mod.Outer.Inner"),
        ("method", "pkg.mod.Outer.Inner", "run"),
        ("function", "pkg.mod", "pkg.mod.Outer.Inner.run.local"),
    }
    assert ast_items("pkg/mod.py", source) == expected
    assert symbol_items(extract("pkg/mod.py", source)) == expected
