"""Which other files a change to one file can affect, so that only those are re-resolved.

Files depend on modules (``FileRecord.deps``). A change that keeps a module's interface (its
definitions, bases and imports) affects no other file. Otherwise a dependent is re-resolved when:
- the change is structural (bases, imports or module-level constructor assignments changed, or the
  file appeared or went away), or
- one of its edges points at a definition that was removed, or
- it mentions (in a call, a base, an import or a typed local) the name of an added definition:
  a new function can resolve a formerly unresolved call, and a new method can override one.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from engram.processors.code.file_graph import NODE_KINDS
from engram.processors.code.ids import entity_id
from engram.processors.code.model import FileSymbols
from engram.processors.code.state import RepoCodeState


@dataclass(slots=True)
class InterfaceDelta:
    names: set[str] = field(default_factory=set)  # module / package names whose dependents to check
    added: set[str] = field(default_factory=set)  # simple names of added definitions
    removed_ids: set[str] = field(default_factory=set)  # node ids of removed definitions
    structural: bool = False


def interface_delta(repo: str, old: FileSymbols | None, new: FileSymbols | None) -> InterfaceDelta:
    delta = InterfaceDelta()
    for symbols in (old, new):
        if symbols is not None:
            delta.names.update({symbols.module, symbols.package} - {""})
    if old is None or new is None:
        delta.structural = True
    else:
        delta.structural = _structure(old) != _structure(new)
    old_defs = {(d.qualname, d.kind): d.name for d in old.definitions} if old else {}
    new_defs = {(d.qualname, d.kind): d.name for d in new.definitions} if new else {}
    delta.added = {name for key, name in new_defs.items() if key not in old_defs}
    delta.removed_ids = {
        entity_id(repo, qual, NODE_KINDS[kind]) for (qual, kind) in old_defs if (qual, kind) not in new_defs
    }
    return delta


def affected_files(state: RepoCodeState, deltas: Iterable[InterfaceDelta], exclude: set[str]) -> set[str]:
    affected: set[str] = set()
    for delta in deltas:
        for path in dependents(state, delta.names) - exclude - affected:
            record = state.files.get(path)
            if record is None:
                continue
            if (
                delta.structural
                or any(dst in delta.removed_ids for _t, _s, dst in record.edges.values())
                or not delta.added.isdisjoint(mentioned_names(record.symbols))
            ):
                affected.add(path)
    return affected


def dependents(state: RepoCodeState, names: set[str]) -> set[str]:
    """Files whose resolution consulted one of ``names``; a package ``__init__`` passes it on (re-exports)."""
    found: set[str] = set()
    work = [n for n in names if n]
    seen = set(work)
    while work:
        for path in state.dependents.get(work.pop(), set()):
            if path in found:
                continue
            found.add(path)
            record = state.files.get(path)
            module = record.symbols.module if record is not None else ""
            if record is not None and module == record.symbols.package and module not in seen:
                seen.add(module)
                work.append(module)
    return found


def mentioned_names(symbols: FileSymbols) -> set[str]:
    """The last segment of every name the file refers to."""
    names = {c.callee.rsplit(".", 1)[-1].removesuffix("()") for c in symbols.calls}
    names.update(b.rsplit(".", 1)[-1] for d in symbols.definitions for b in d.bases)
    names.update(i.target.rsplit(".", 1)[-1] for i in symbols.imports)
    names.update(t.type_expr.rsplit(".", 1)[-1] for t in symbols.local_types)
    return names


def _structure(symbols: FileSymbols) -> tuple[object, ...]:
    bases = sorted((d.qualname, d.bases) for d in symbols.definitions if d.bases)
    imports = sorted((i.local, i.target) for i in symbols.imports)
    variables = sorted((t.name, t.type_expr) for t in symbols.local_types if t.scope == symbols.module)
    return symbols.module, symbols.package, tuple(bases), tuple(imports), tuple(variables)
