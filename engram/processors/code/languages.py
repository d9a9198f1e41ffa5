"""The grammars (from the tree-sitter PyPI wheels) and the per-language query files.

Queries are read with importlib.resources from ``queries/<language>.scm`` (package data, not I/O on
the user's files); JavaScript and TypeScript add the patterns they share, ``queries/ecmascript.scm``.
Parsers and compiled queries are built lazily and cached per process.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from typing import Final

import tree_sitter as ts
import tree_sitter_go
import tree_sitter_java
import tree_sitter_javascript
import tree_sitter_python
import tree_sitter_typescript

from engram.processors.code.model import UnsupportedLanguageError

# language name -> (grammar loader, query file stems, read in this order as one query);
# ecmascript.scm holds the patterns JavaScript and TypeScript share
_GRAMMARS: Final = {
    "python": (tree_sitter_python.language, ("python",)),
    "javascript": (tree_sitter_javascript.language, ("javascript", "ecmascript")),
    "typescript": (tree_sitter_typescript.language_typescript, ("typescript", "ecmascript")),
    "tsx": (tree_sitter_typescript.language_tsx, ("typescript", "ecmascript")),
    "java": (tree_sitter_java.language, ("java",)),
    "go": (tree_sitter_go.language, ("go",)),
}
LANGUAGES: Final[tuple[str, ...]] = tuple(_GRAMMARS)
_EXTENSIONS: Final = {
    ".py": "python",
    ".pyi": "python",
    ".js": "javascript",
    ".mjs": "javascript",
    ".cjs": "javascript",
    ".jsx": "javascript",
    ".ts": "typescript",
    ".mts": "typescript",
    ".cts": "typescript",
    ".tsx": "tsx",
    ".java": "java",
    ".go": "go",
}
_ALIASES: Final = {"py": "python", "js": "javascript", "ts": "typescript", "golang": "go"}


@dataclass(frozen=True, slots=True)
class Grammar:
    name: str
    language: ts.Language
    query: ts.Query


def language_for(path: str, declared: str = "") -> str:
    """The canonical language name: the declared one when known, else guessed from the extension."""
    name = _ALIASES.get(declared.lower(), declared.lower())
    if name in _GRAMMARS:
        return name
    dot = path.rfind(".")
    guessed = _EXTENSIONS.get(path[dot:].lower()) if dot >= 0 else None
    if guessed is None:
        msg = f"no grammar for {path!r} (declared language {declared!r})"
        raise UnsupportedLanguageError(msg)
    return guessed


def is_supported(path: str, declared: str = "") -> bool:
    try:
        language_for(path, declared)
    except UnsupportedLanguageError:
        return False
    return True


@functools.cache
def grammar(name: str) -> Grammar:
    if name not in _GRAMMARS:
        msg = f"no grammar named {name!r}"
        raise UnsupportedLanguageError(msg)
    loader, stems = _GRAMMARS[name]
    language = ts.Language(loader())
    queries = importlib.resources.files("engram.processors.code").joinpath("queries")
    source = "\n".join(queries.joinpath(f"{stem}.scm").read_text("utf-8") for stem in stems)
    return Grammar(name, language, ts.Query(language, source))


@functools.cache
def _parser(name: str) -> ts.Parser:
    return ts.Parser(grammar(name).language)


def parse(name: str, source: bytes) -> ts.Tree:
    return _parser(name).parse(source)
