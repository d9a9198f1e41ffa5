"""Agreement of the tree-sitter extraction with Python's own ``ast`` (the ground truth).

Items compared, as sets per file:
- ``("class", module, class qualname)``
- ``("base", class qualname, base expression as written)``
- ``("method", class qualname, method name)``: a function whose nearest enclosing definition is a class
- ``("function", module, qualname)``: any other function, nested ones included
- ``("import", module, import as written)``: ``a.b`` for ``import a.b``, ``.m:name`` for ``from .m import name``

Agreement is |both| / |either|. Pure: it takes texts, not paths on disk.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from engram.processors.code.extract import extract
from engram.processors.code.model import FileSymbols
from engram.processors.code.python_syntax import python_module

Item = tuple[str, str, str]


@dataclass(slots=True)
class Agreement:
    files: int = 0
    skipped: list[str] = field(default_factory=list)  # files ast cannot parse
    agreed: int = 0
    only_ast: list[Item] = field(default_factory=list)
    only_tree_sitter: list[Item] = field(default_factory=list)

    @property
    def items(self) -> int:
        return self.agreed + len(self.only_ast) + len(self.only_tree_sitter)

    @property
    def ratio(self) -> float:
        return self.agreed / self.items if self.items else 1.0


def compare_python(files: Iterable[tuple[str, str]]) -> Agreement:
    """``files`` are (repo-relative path, text) pairs of Python files."""
    result = Agreement()
    for path, text in files:
        try:
            expected = ast_items(path, text)
        except (SyntaxError, ValueError):
            result.skipped.append(path)
            continue
        found = symbol_items(extract(path, text, "python"))
        result.files += 1
        result.agreed += len(expected & found)
        result.only_ast.extend(sorted(expected - found))
        result.only_tree_sitter.extend(sorted(found - expected))
    return result


def symbol_items(symbols: FileSymbols) -> set[Item]:
    items: set[Item] = set()
    for d in symbols.definitions:
        if d.kind == "class":
            items.add(("class", symbols.module, d.qualname))
            items.update(("base", d.qualname, base) for base in d.bases)
        elif d.kind == "method":
            items.add(("method", d.parent, d.name))
        else:
            items.add(("function", symbols.module, d.qualname))
    items.update(("import", symbols.module, i.raw) for i in symbols.imports)
    return items


def ast_items(path: str, text: str) -> set[Item]:
    module, _package = python_module(path)
    tree = ast.parse(text)
    items: set[Item] = set()
    _visit(tree, module, False, _Source(text), module, items)
    return items


class _Source:
    """Source segments by (line, utf-8 column) in O(1); ``ast.get_source_segment`` re-splits the text
    on every call, which is quadratic on large generated files."""

    def __init__(self, text: str) -> None:
        self.data = text.encode("utf-8")
        self.line_starts = [0]
        for index, byte in enumerate(self.data):
            if byte == 10:
                self.line_starts.append(index + 1)

    def segment(self, node: ast.expr) -> str:
        if node.end_lineno is None or node.end_col_offset is None:
            return ""
        start = self.line_starts[node.lineno - 1] + node.col_offset
        end = self.line_starts[node.end_lineno - 1] + node.end_col_offset
        return self.data[start:end].decode("utf-8", "replace")


def _visit(node: ast.AST, scope: str, in_class: bool, text: _Source, module: str, items: set[Item]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            qual = f"{scope}.{child.name}"
            items.add(("class", module, qual))
            for base in child.bases:
                items.add(("base", qual, text.segment(base)))
            _visit(child, qual, True, text, module, items)
        elif isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            if in_class:
                items.add(("method", scope, child.name))
            else:
                items.add(("function", module, f"{scope}.{child.name}"))
            _visit(child, f"{scope}.{child.name}", False, text, module, items)
        else:
            if isinstance(child, ast.Import):
                items.update(("import", module, alias.name) for alias in child.names)
            elif isinstance(child, ast.ImportFrom):
                written = "." * child.level + (child.module or "")
                items.update(("import", module, f"{written}:{alias.name}") for alias in child.names)
            _visit(child, scope, in_class, text, module, items)
