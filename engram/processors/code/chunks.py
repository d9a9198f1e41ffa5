"""Structural chunks: split along AST boundaries, then merge small siblings up to a token budget.

A node that fits the budget is one piece; a bigger one is split into its named children, recursively,
and adjacent pieces are merged greedily while their summed token counts fit (cAST-style split-then-
merge, seed 000 section 4.2). Each chunk knows its breadcrumbs: the innermost definition enclosing
it, the class around it, that class's bases, and the names called inside it. Token counts are those
of the given TokenCounter.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import tree_sitter as ts

from engram.processors.code.model import Definition, FileSymbols
from engram.processors.tokens import TokenCounter


@dataclass(frozen=True, slots=True)
class ChunkingConfig:
    max_tokens: int = 400
    max_calls_listed: int = 24


FINE = ChunkingConfig(max_tokens=200)
BALANCED = ChunkingConfig()
COARSE = ChunkingConfig(max_tokens=800)


@dataclass(frozen=True, slots=True)
class Chunk:
    """Lines are 1-based inclusive. ``scope`` is the innermost definition (or the module) holding the
    whole chunk; ``members`` are the definitions that start inside it."""

    start_line: int
    end_line: int
    code: str
    scope: str
    parent_class: str
    signature: str
    bases: tuple[str, ...]
    calls: tuple[str, ...]
    members: tuple[str, ...]

    def breadcrumb(self, path: str) -> str:
        lines = [f"# file: {path}:{self.start_line}-{self.end_line}"]
        if self.parent_class:
            bases = f"({', '.join(self.bases)})" if self.bases else ""
            lines.append(f"# class: {self.parent_class}{bases}")
        if self.signature:
            lines.append(f"# in: {self.signature}")
        if self.calls:
            lines.append(f"# calls: {', '.join(self.calls)}")
        return "\n".join(lines)


_SURELY_OVER = 12


@dataclass(frozen=True, slots=True)
class _Piece:
    start: int  # bytes
    end: int
    tokens: int


def split_then_merge(root: ts.Node, source: bytes, counter: TokenCounter, max_tokens: int) -> list[tuple[int, int]]:
    """Byte spans of the chunks, in order, covering every named top-level node of ``root``."""
    return [(p.start, p.end) for p in _split(root, source, counter, max_tokens)]


def _split(node: ts.Node, source: bytes, counter: TokenCounter, budget: int) -> list[_Piece]:
    size = node.end_byte - node.start_byte
    # A cl100k token is at least one byte, so a node no longer than the budget in bytes fits; code
    # averages 3-4 bytes a token, so one far longer is split without counting it (counting every
    # level would make the cost depth x size).
    if size <= budget:
        tokens = size
    elif size > _SURELY_OVER * budget:
        tokens = budget + 1
    else:
        tokens = counter.count(source[node.start_byte : node.end_byte].decode("utf-8", "replace"))
    children = node.named_children
    if (tokens <= budget and node.parent is not None) or not children:
        return [_Piece(node.start_byte, node.end_byte, tokens)]
    pieces: list[_Piece] = []
    for child in children:
        pieces.extend(_split(child, source, counter, budget))
    return _merge(pieces, budget)


def _merge(pieces: list[_Piece], budget: int) -> list[_Piece]:
    merged: list[_Piece] = []
    for piece in pieces:
        last = merged[-1] if merged else None
        if last is not None and last.tokens + piece.tokens <= budget:
            merged[-1] = _Piece(last.start, piece.end, last.tokens + piece.tokens)
        else:
            merged.append(piece)
    return merged


def chunk_file(
    symbols: FileSymbols, tree: ts.Tree, source: bytes, counter: TokenCounter, config: ChunkingConfig = BALANCED
) -> list[Chunk]:
    line_starts = _line_starts(source)
    crumbs = _Breadcrumbs(symbols, config)
    chunks: list[Chunk] = []
    for start, end in split_then_merge(tree.root_node, source, counter, config.max_tokens):
        first = _line_of(line_starts, start)
        last = _line_of(line_starts, max(end - 1, start))
        code = source[line_starts[first - 1] : end].decode("utf-8", "replace")
        if code.strip():
            chunks.append(crumbs.chunk(first, last, code))
    return chunks


class _Breadcrumbs:
    """Definitions and calls indexed by line, so each chunk finds its context by bisection."""

    def __init__(self, symbols: FileSymbols, config: ChunkingConfig) -> None:
        self.symbols = symbols
        self.config = config
        self.defs = sorted(symbols.definitions, key=lambda d: (d.start_line, -d.end_line))
        self.def_starts = [d.start_line for d in self.defs]
        self.by_qual = {d.qualname: d for d in symbols.definitions}
        self.calls = sorted(symbols.calls, key=lambda c: c.line)
        self.call_lines = [c.line for c in self.calls]
        self.top = symbols.package if symbols.language in ("java", "go") else symbols.module

    def chunk(self, first: int, last: int, code: str) -> Chunk:
        upto = bisect.bisect_right(self.def_starts, first)
        scope: Definition | None = None
        for d in self.defs[:upto]:  # sorted by start, outer first: the last enclosing one is innermost
            if d.end_line >= last:
                scope = d
        klass = scope
        while klass is not None and klass.kind != "class":
            klass = self.by_qual.get(klass.parent)
        calls: list[str] = []
        lo, hi = bisect.bisect_left(self.call_lines, first), bisect.bisect_right(self.call_lines, last)
        for call in self.calls[lo:hi]:
            if call.callee not in calls and len(calls) < self.config.max_calls_listed:
                calls.append(call.callee)
        lo, hi = bisect.bisect_left(self.def_starts, first), bisect.bisect_right(self.def_starts, last)
        return Chunk(
            first,
            last,
            code,
            scope.qualname if scope else self.top,
            klass.qualname if klass else "",
            scope.signature if scope and scope.kind != "class" else "",
            klass.bases if klass else (),
            tuple(calls),
            tuple(d.qualname for d in self.defs[lo:hi]),
        )


def _line_starts(source: bytes) -> list[int]:
    starts = [0]
    index = source.find(b"\n")
    while index >= 0:
        starts.append(index + 1)
        index = source.find(b"\n", index + 1)
    return starts


def _line_of(line_starts: list[int], offset: int) -> int:
    """1-based line holding byte ``offset`` (binary search)."""
    lo, hi = 0, len(line_starts) - 1
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if line_starts[mid] <= offset:
            lo = mid
        else:
            hi = mid - 1
    return lo + 1
