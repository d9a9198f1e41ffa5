"""The repo-level symbol table and name resolution across files.

`RepoSymbols` indexes every file's definitions, modules and imports (imports double as re-exports,
as in a package's ``__init__``). `FileResolver` resolves one file's names in its own scopes:

- ``self.x()`` / ``this.x()`` through the enclosing class and its bases (left-to-right depth-first
  linearization over the known classes, an approximation of C3), ``super().x()`` skipping the class;
- ``self.svc.x()`` and ``v.x()`` where ``self.svc`` / ``v`` were assigned a constructor call;
- imported aliases (``from a import b as c``, ``import a.b as m``) and module-qualified calls (``m.f()``),
  following re-exports;
- enclosing scopes (for Python, class bodies are not enclosing scopes of their methods).

A name that cannot be resolved keeps its best dotted guess and ``resolved=False``. Every module
consulted is recorded in ``deps`` so that a change to that module re-resolves this file.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.processors.code.model import Definition, FileSymbols

_SELF = frozenset({"self", "cls", "this"})
_MAX_DEPTH = 12


@dataclass(frozen=True, slots=True)
class Resolution:
    qualname: str
    resolved: bool
    kind: str = ""  # the definition kind when resolved


@dataclass(slots=True)
class RepoSymbols:
    files: dict[str, FileSymbols] = field(default_factory=dict)
    defs: dict[str, Definition] = field(default_factory=dict)
    def_path: dict[str, str] = field(default_factory=dict)
    modules: dict[str, str] = field(default_factory=dict)  # module or package qualname -> a path in it
    file_modules: dict[str, str] = field(default_factory=dict)  # a file's own module qualname -> its path
    exports: dict[str, dict[str, str]] = field(default_factory=dict)
    methods: dict[str, dict[str, str]] = field(default_factory=dict)  # class -> method name -> qualname
    module_vars: dict[str, tuple[str, str]] = field(default_factory=dict)  # module.var -> (path, type expr)
    base_cache: dict[str, tuple[str, ...]] = field(default_factory=dict)
    var_cache: dict[str, str | None] = field(default_factory=dict)

    def add(self, symbols: FileSymbols) -> None:
        self.remove(symbols.path)
        self.files[symbols.path] = symbols
        for top in {symbols.module, symbols.package}:
            if top:
                self.modules.setdefault(top, symbols.path)
        self.file_modules.setdefault(symbols.module, symbols.path)
        exported = self.exports.setdefault(symbols.module, {})
        for binding in symbols.imports:
            if binding.local:
                exported.setdefault(binding.local, binding.target)
        for t in symbols.local_types:
            if t.scope == symbols.module and "." not in t.name:  # ``Common = Section(...)`` at module level
                self.module_vars.setdefault(f"{symbols.module}.{t.name}", (symbols.path, t.type_expr))
        for d in symbols.definitions:
            self.defs.setdefault(d.qualname, d)
            self.def_path.setdefault(d.qualname, symbols.path)
            if d.kind == "method":
                self.methods.setdefault(d.parent, {}).setdefault(d.name, d.qualname)
        self.base_cache.clear()
        self.var_cache.clear()

    def remove(self, path: str) -> FileSymbols | None:
        old = self.files.pop(path, None)
        if old is None:
            return None
        for top in (old.module, old.package):
            if self.modules.get(top) == path:
                del self.modules[top]
                other = next((p for p, s in self.files.items() if top in (s.module, s.package)), None)
                if other is not None:
                    self.modules[top] = other
        if self.file_modules.get(old.module) == path:
            del self.file_modules[old.module]
        self.exports.pop(old.module, None)
        for d in old.definitions:
            if self.def_path.get(d.qualname) == path:
                del self.defs[d.qualname]
                del self.def_path[d.qualname]
                owned = self.methods.get(d.parent)
                if d.kind == "method" and owned is not None and owned.get(d.name) == d.qualname:
                    del owned[d.name]
        for t in old.local_types:
            key = f"{old.module}.{t.name}"
            if self.module_vars.get(key, ("", ""))[0] == path:
                del self.module_vars[key]
        self.base_cache.clear()
        self.var_cache.clear()
        return old

    def module_of(self, qualname: str) -> str:
        path = self.def_path.get(qualname) or self.modules.get(qualname)
        symbols = self.files.get(path) if path else None
        return symbols.module if symbols else ""

    def bases(self, class_qual: str) -> tuple[str, ...]:
        """The class's bases, resolved in its own file (cached until the table changes)."""
        cached = self.base_cache.get(class_qual)
        if cached is not None:
            return cached
        self.base_cache[class_qual] = ()  # guards against cycles while resolving
        definition = self.defs.get(class_qual)
        path = self.def_path.get(class_qual)
        if definition is None or path is None:
            return ()
        resolver = FileResolver(self, self.files[path])
        found = tuple(
            r.qualname for r in (resolver.resolve(definition.parent, b) for b in definition.bases) if r.resolved
        )
        self.base_cache[class_qual] = found
        return found

    def var_class(self, var_qual: str) -> str | None:
        """The class a module-level variable was constructed from, resolved in its own file."""
        if var_qual in self.var_cache:
            return self.var_cache[var_qual]
        self.var_cache[var_qual] = None  # guards against cycles
        path, type_expr = self.module_vars[var_qual]
        symbols = self.files[path]
        result = FileResolver(self, symbols).resolve(symbols.module, type_expr)
        found = result.qualname if result.resolved and result.kind == "class" else None
        self.var_cache[var_qual] = found
        return found

    def mro(self, class_qual: str) -> list[str]:
        order: list[str] = []
        stack = [class_qual]
        while stack and len(order) < 64:
            current = stack.pop()
            if current in order:
                continue
            order.append(current)
            stack.extend(reversed(self.bases(current)))
        return order


class FileResolver:
    def __init__(self, repo: RepoSymbols, symbols: FileSymbols) -> None:
        self.repo = repo
        self.symbols = symbols
        self.python = symbols.language == "python"
        self.imports = {b.local: b.target for b in symbols.imports if b.local}
        self.star_imports = [b.target for b in symbols.imports if not b.local]
        self.local_types = {(t.scope, t.name): t.type_expr for t in symbols.local_types}
        self._typing: set[tuple[str, str]] = set()  # (scope, name) being typed: breaks x = x.f() cycles
        self.deps: set[str] = {symbols.package} if symbols.language in ("java", "go") else set()
        for binding in symbols.imports:
            self.deps.update(_prefixes(binding.target))
            if ":" not in binding.raw and "/" not in binding.raw:
                self.deps.update(_prefixes(binding.raw))

    def resolve(self, scope: str, dotted: str) -> Resolution:
        parts = dotted.split(".")
        start = self._head(scope, parts[0], parts[1:])
        if start is None:
            return Resolution(self._guess(scope, dotted), False)
        qual, rest = start
        return self._walk(qual, rest, 0)

    def enclosing_class(self, scope: str) -> str | None:
        current = self.repo.defs.get(scope)
        while current is not None:
            if current.kind == "class":
                return current.qualname
            current = self.repo.defs.get(current.parent)
        return None

    def _head(self, scope: str, head: str, rest: list[str]) -> tuple[str, list[str]] | None:
        if head in _SELF or head in ("super()", "super"):
            klass = self.enclosing_class(scope)
            if klass is None or not rest:  # ``super()`` itself is the builtin, not the class
                return None
            if head in _SELF and rest:
                typed = self._typed(scope, f"{head}.{rest[0]}")
                if typed is not None:
                    return typed, rest[1:]
            if head.startswith("super") and rest:
                member = self._member(klass, rest[0], skip_self=True)
                return (member, rest[1:]) if member is not None else None
            return klass, rest
        if head.endswith("()"):
            inner = self.resolve(scope, head[:-2])
            return (inner.qualname, rest) if inner.resolved and inner.kind == "class" else None
        typed = self._typed(scope, head)
        if typed is not None:
            return typed, rest
        found = self._lookup(scope, head)
        if found is None and not self.python:  # Java, TS, Go: an unqualified name may be an inherited member
            klass = self.enclosing_class(scope)
            found = self._member(klass, head) if klass is not None else None
        return (found, rest) if found is not None else None

    def _typed(self, scope: str, name: str) -> str | None:
        for s in self._scopes(scope, classes=True):
            type_expr = self.local_types.get((s, name))
            if type_expr is not None and (s, name) not in self._typing:
                self._typing.add((s, name))
                try:
                    result = self.resolve(s, type_expr)
                finally:
                    self._typing.discard((s, name))
                return result.qualname if result.resolved and result.kind == "class" else None
        return None

    def _lookup(self, scope: str, name: str) -> str | None:
        for s in self._scopes(scope, classes=not self.python):
            candidate = f"{s}.{name}"
            if candidate in self.repo.defs:
                return candidate
        if name in self.imports:
            return self.imports[name]
        for target in self.star_imports:
            self.deps.add(target)
            if name in self.repo.exports.get(target, {}) or f"{target}.{name}" in self.repo.defs:
                return f"{target}.{name}"
        return None

    def _scopes(self, scope: str, classes: bool) -> list[str]:
        out: list[str] = []
        current = self.repo.defs.get(scope)
        first = True
        while current is not None:
            if classes or current.kind != "class" or first:
                out.append(current.qualname)
            first = False
            current = self.repo.defs.get(current.parent)
        out.append(self.symbols.package if self.symbols.language in ("java", "go") else self.symbols.module)
        return out

    def _member(self, klass: str, name: str, skip_self: bool = False) -> str | None:
        for owner in self.repo.mro(klass)[1 if skip_self else 0 :]:
            self.deps.add(self.repo.module_of(owner))
            method = self.repo.methods.get(owner, {}).get(name)
            if method is not None:
                return method
            if f"{owner}.{name}" in self.repo.defs:
                return f"{owner}.{name}"
        return None

    def _walk(self, qual: str, rest: list[str], depth: int) -> Resolution:
        """Follow ``rest`` from ``qual``: members through the MRO, module attributes through re-exports."""
        for index, part in enumerate(rest):
            definition = self.repo.defs.get(qual)
            if definition is not None and definition.kind == "class":
                member = self._member(qual, part)
                if member is None:
                    return Resolution(".".join([qual, *rest[index:]]), False)
                qual = member
            elif definition is not None:
                return Resolution(".".join([qual, *rest[index:]]), False)
            else:
                return self._canonical(".".join([qual, *rest[index:]]), depth)
        return self._canonical(qual, depth)

    def canonical(self, dotted: str) -> Resolution:
        """An absolute dotted name (an import target) followed through re-exports to a definition."""
        return self._canonical(dotted, 0)

    def _canonical(self, dotted: str, depth: int) -> Resolution:
        definition = self.repo.defs.get(dotted)
        if definition is not None:
            self.deps.add(self.repo.module_of(dotted))
            return Resolution(dotted, True, definition.kind)
        if depth > _MAX_DEPTH:
            return Resolution(dotted, False)
        parts = dotted.split(".")
        for cut in range(len(parts) - 1, 0, -1):
            prefix = ".".join(parts[:cut])
            if prefix in self.repo.defs:
                return self._walk(prefix, parts[cut:], depth + 1)
            if prefix in self.repo.module_vars:
                klass = self.repo.var_class(prefix)
                self.deps.add(self.repo.module_of(prefix.rsplit(".", 1)[0]))
                if klass is not None:
                    return self._walk(klass, parts[cut:], depth + 1)
                return Resolution(dotted, False)
            if prefix in self.repo.modules:
                self.deps.add(prefix)
                target = self.repo.exports.get(prefix, {}).get(parts[cut])
                if target is not None and target != dotted:
                    return self._canonical(".".join([target, *parts[cut + 1 :]]), depth + 1)
                return Resolution(dotted, False)
        return Resolution(dotted, False)

    def _guess(self, scope: str, dotted: str) -> str:
        """The name an unresolved call keeps: ``self.x`` becomes ``Class.x``; others stay as written."""
        head, _, rest = dotted.partition(".")
        if head in _SELF and rest:
            klass = self.enclosing_class(scope)
            return f"{klass}.{rest}" if klass else dotted
        return dotted


def _prefixes(dotted: str) -> list[str]:
    parts = dotted.split(".")
    return [".".join(parts[: i + 1]) for i in range(len(parts))]
