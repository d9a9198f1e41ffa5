"""Parse one file's text into its FileSymbols. Pure: text in, values out; no disk I/O."""

from __future__ import annotations

import tree_sitter as ts

from engram.processors.code.languages import language_for, parse
from engram.processors.code.model import FileSymbols, ImportBinding
from engram.processors.code.python_syntax import capture_python, python_module
from engram.processors.code.scopes import Captured, assign_scopes


def extract(path: str, text: str, language: str = "") -> FileSymbols:
    """Symbols of one file; ``language`` may be empty (guessed from the path's extension)."""
    symbols, _tree = extract_with_tree(path, text, language)
    return symbols


def extract_with_tree(path: str, text: str, language: str = "") -> tuple[FileSymbols, ts.Tree]:
    name = language_for(path, language)
    source = text.encode("utf-8")
    tree = parse(name, source)
    captured, imports, module, package = _capture(name, path, tree.root_node, source)
    top = module if name == "python" else package
    scoped = assign_scopes(captured, top, package)
    symbols = FileSymbols(
        path=path,
        language=name,
        module=module,
        package=package,
        line_count=text.count("\n") + (0 if text.endswith("\n") or not text else 1),
        definitions=scoped.definitions,
        calls=scoped.calls,
        imports=tuple(imports),
        local_types=scoped.local_types,
    )
    return symbols, tree


def _capture(name: str, path: str, root: ts.Node, source: bytes) -> tuple[Captured, list[ImportBinding], str, str]:
    if name == "python":
        module, package = python_module(path)
        captured, imports = capture_python(root, source, package)
        return captured, imports, module, package
    from engram.processors.code.other_syntax import capture_other

    return capture_other(name, path, root, source)
