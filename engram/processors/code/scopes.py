"""Turn a language's raw captures into scoped definitions, calls and local types.

Each language module lists what its query found with byte spans; this sweep sorts them by start and
keeps a stack of open definitions, so every item learns its enclosing scope in one linear pass. A
function whose immediate scope is a class is a method. Qualnames are dotted paths from the module.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.processors.code.model import CallSite, Definition, DefKind, LocalType


@dataclass(frozen=True, slots=True)
class RawDef:
    start: int
    end: int
    is_class: bool
    name: str
    start_line: int
    end_line: int
    signature: str
    bases: tuple[str, ...] = ()
    owner: str = ""  # explicit owner type (a Go receiver), relative to the package


@dataclass(frozen=True, slots=True)
class RawCall:
    start: int
    callee: str
    line: int


@dataclass(frozen=True, slots=True)
class RawLocalType:
    start: int
    name: str
    type_expr: str


@dataclass(slots=True)
class Captured:
    defs: list[RawDef] = field(default_factory=list)
    calls: list[RawCall] = field(default_factory=list)
    local_types: list[RawLocalType] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class Scoped:
    definitions: tuple[Definition, ...]
    calls: tuple[CallSite, ...]
    local_types: tuple[LocalType, ...]


def assign_scopes(captured: Captured, module: str, package: str) -> Scoped:
    """``module`` prefixes nested qualnames; ``package`` prefixes explicitly owned (Go) methods."""
    items: list[tuple[int, int, int, RawDef | RawCall | RawLocalType]] = []
    for d in captured.defs:
        items.append((d.start, -d.end, 0, d))
    for c in captured.calls:
        items.append((c.start, 0, 1, c))
    for t in captured.local_types:
        items.append((t.start, 0, 2, t))
    items.sort(key=lambda item: (item[0], item[1], item[2]))
    stack: list[tuple[int, Definition]] = []  # (end byte, definition)
    definitions: list[Definition] = []
    calls: list[CallSite] = []
    local_types: list[LocalType] = []
    for start, _neg_end, _order, item in items:
        while stack and stack[-1][0] <= start:
            stack.pop()
        enclosing = stack[-1][1] if stack else None
        scope = enclosing.qualname if enclosing else module
        if isinstance(item, RawDef):
            definition = _definition(item, enclosing, scope, package)
            definitions.append(definition)
            stack.append((item.end, definition))
        elif isinstance(item, RawCall):
            calls.append(CallSite(scope, item.callee, item.line))
        else:
            local_types.append(_local_type(item, stack, scope))
    return Scoped(tuple(definitions), tuple(calls), tuple(local_types))


def _definition(raw: RawDef, enclosing: Definition | None, scope: str, package: str) -> Definition:
    kind: DefKind
    if raw.is_class:
        kind = "class"
    elif raw.owner or (enclosing is not None and enclosing.kind == "class"):
        kind = "method"
    else:
        kind = "function"
    parent = f"{package}.{raw.owner}" if raw.owner else scope
    return Definition(
        kind, raw.name, f"{parent}.{raw.name}", parent, raw.start_line, raw.end_line, raw.signature, raw.bases
    )


def _local_type(raw: RawLocalType, stack: list[tuple[int, Definition]], scope: str) -> LocalType:
    """``self.x = C()`` in a method types ``self.x`` for the whole class, so it is scoped to the class."""
    head = raw.name.split(".", 1)[0]
    if head in ("self", "this") and "." in raw.name:
        for _end, definition in reversed(stack):
            if definition.kind == "class":
                return LocalType(definition.qualname, raw.name, raw.type_expr)
    return LocalType(scope, raw.name, raw.type_expr)
