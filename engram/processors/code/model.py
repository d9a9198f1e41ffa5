"""What the Code Brain extracts from one file, before any cross-file resolution.

Everything here is a frozen value with a JSON-able ``to_dict``/``from_dict`` pair, because the
per-repo symbol table (which holds these) lives in a Faust table keyed by repo. Lines are 1-based
and inclusive.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, TypeAlias

DefKind: TypeAlias = Literal["class", "function", "method"]
DEF_KINDS: Final[tuple[DefKind, ...]] = ("class", "function", "method")

JSONValue: TypeAlias = "str | int | float | bool | None | list[JSONValue] | dict[str, JSONValue]"
JSONDict: TypeAlias = dict[str, JSONValue]


class CodeError(Exception):
    """Base of the Code Brain's typed errors."""


class UnsupportedLanguageError(CodeError):
    """The language named by a CodeChange (or guessed from its path) has no grammar here."""


class CodeStateError(CodeError):
    """A serialized symbol table could not be read back."""


@dataclass(frozen=True, slots=True)
class Definition:
    """A class, function or method. ``parent`` is the qualname of the enclosing scope (the module's
    qualname for top-level definitions); ``bases`` are base expressions as written in the source."""

    kind: DefKind
    name: str
    qualname: str
    parent: str
    start_line: int
    end_line: int
    signature: str
    bases: tuple[str, ...] = ()

    def to_list(self) -> list[JSONValue]:
        return [
            self.kind,
            self.name,
            self.qualname,
            self.parent,
            self.start_line,
            self.end_line,
            self.signature,
            list(self.bases),
        ]

    @staticmethod
    def from_list(row: list[JSONValue]) -> Definition:
        kind, name, qual, parent, start, end, sig, bases = row
        return Definition(
            _kind(kind),
            str(name),
            str(qual),
            str(parent),
            _int(start),
            _int(end),
            str(sig),
            tuple(str(b) for b in _list(bases)),
        )


@dataclass(frozen=True, slots=True)
class CallSite:
    """A call. ``callee`` is the called expression normalized to a dotted path (``self.fraud.check``,
    ``m.f``); a non-name receiver is written ``<Class>()`` when it is a constructor call and ``?`` otherwise."""

    scope: str
    callee: str
    line: int


@dataclass(frozen=True, slots=True)
class ImportBinding:
    """One imported name. ``local`` is the name bound in the file ('' for a star import), ``target``
    the absolute dotted path it refers to, ``raw`` the import as written (``a.b`` or ``.m:name``)."""

    local: str
    target: str
    raw: str
    line: int


@dataclass(frozen=True, slots=True)
class LocalType:
    """``name = SomeClass(...)`` inside ``scope``: lets ``name.method()`` resolve through SomeClass.
    ``name`` may be ``self.attr`` for attributes assigned in a method."""

    scope: str
    name: str
    type_expr: str


@dataclass(frozen=True, slots=True)
class FileSymbols:
    path: str
    language: str
    module: str
    package: str
    line_count: int
    definitions: tuple[Definition, ...]
    calls: tuple[CallSite, ...]
    imports: tuple[ImportBinding, ...]
    local_types: tuple[LocalType, ...] = ()

    def to_dict(self) -> JSONDict:
        return {
            "path": self.path,
            "language": self.language,
            "module": self.module,
            "package": self.package,
            "line_count": self.line_count,
            "definitions": [d.to_list() for d in self.definitions],
            "calls": [[c.scope, c.callee, c.line] for c in self.calls],
            "imports": [[i.local, i.target, i.raw, i.line] for i in self.imports],
            "local_types": [[t.scope, t.name, t.type_expr] for t in self.local_types],
        }

    @staticmethod
    def from_dict(data: JSONDict) -> FileSymbols:
        try:
            return FileSymbols(
                path=str(data["path"]),
                language=str(data["language"]),
                module=str(data["module"]),
                package=str(data["package"]),
                line_count=_int(data["line_count"]),
                definitions=tuple(Definition.from_list(_list(r)) for r in _list(data["definitions"])),
                calls=tuple(CallSite(str(s), str(c), _int(n)) for s, c, n in (_list(r) for r in _list(data["calls"]))),
                imports=tuple(
                    ImportBinding(str(a), str(t), str(r), _int(n))
                    for a, t, r, n in (_list(x) for x in _list(data["imports"]))
                ),
                local_types=tuple(
                    LocalType(str(s), str(n), str(t)) for s, n, t in (_list(x) for x in _list(data["local_types"]))
                ),
            )
        except (KeyError, ValueError, TypeError) as exc:
            msg = f"cannot read file symbols: {exc}"
            raise CodeStateError(msg) from exc


def _kind(value: JSONValue) -> DefKind:
    for kind in DEF_KINDS:
        if value == kind:
            return kind
    msg = f"unknown definition kind {value!r}"
    raise CodeStateError(msg)


def _int(value: JSONValue) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        msg = f"expected an int, got {value!r}"
        raise CodeStateError(msg)
    return value


def _list(value: JSONValue) -> list[JSONValue]:
    if not isinstance(value, list):
        msg = f"expected a list, got {value!r}"
        raise CodeStateError(msg)
    return value
