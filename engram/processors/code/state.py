"""Per-repo state of the Code Brain, JSON-able so that it can live in a Faust table keyed by repo.

Only the per-file records are serialized; the symbol table, the reverse dependency index and the
reference counts of unresolved nodes are rebuilt from them on load.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from engram.processors.code.model import CodeStateError, FileSymbols, JSONDict, JSONValue
from engram.processors.code.symbols import RepoSymbols
from engram.schemas.records import LAYERS, Layer

EdgeKey = tuple[str, str, str]  # (type, src, dst)
STATE_VERSION = 1


@dataclass(slots=True)
class FileRecord:
    symbols: FileSymbols
    layer: Layer
    nodes: dict[str, tuple[str, str]]  # node id -> (kind, digest of its content)
    static_edges: dict[str, EdgeKey]  # from the text alone: CONTAINS, same-file HAS_METHOD
    edges: dict[str, EdgeKey]  # from resolution: INHERITS, CALLS, IMPORTS, cross-file HAS_METHOD
    unresolved: dict[str, str]  # unresolved node id -> name
    deps: set[str]  # module / package names this file's resolution consulted
    interface: str  # digest of what other files can see: definitions, bases, imports

    def all_edges(self) -> dict[str, EdgeKey]:
        return {**self.static_edges, **self.edges}

    def to_dict(self) -> JSONDict:
        deps: list[JSONValue] = list(sorted(self.deps))
        return {
            "symbols": self.symbols.to_dict(),
            "layer": self.layer,
            "nodes": {k: [kind, digest] for k, (kind, digest) in self.nodes.items()},
            "static_edges": {k: list(v) for k, v in self.static_edges.items()},
            "edges": {k: list(v) for k, v in self.edges.items()},
            "unresolved": dict(self.unresolved),
            "deps": deps,
            "interface": self.interface,
        }

    @staticmethod
    def from_dict(data: JSONDict) -> FileRecord:
        layer = data.get("layer")
        symbols = data.get("symbols")
        if layer not in LAYERS or not isinstance(symbols, dict):
            msg = f"bad file record (layer {layer!r})"
            raise CodeStateError(msg)
        return FileRecord(
            symbols=FileSymbols.from_dict(symbols),
            layer=next(x for x in LAYERS if x == layer),
            nodes={k: (str(v[0]), str(v[1])) for k, v in _pairs(data, "nodes")},
            static_edges={k: _edge(v) for k, v in _pairs(data, "static_edges")},
            edges={k: _edge(v) for k, v in _pairs(data, "edges")},
            unresolved={k: str(v) for k, v in _mapping(data, "unresolved").items()},
            deps={str(d) for d in _seq(data.get("deps"))},
            interface=str(data.get("interface", "")),
        )


@dataclass(slots=True)
class RepoCodeState:
    repo: str
    files: dict[str, FileRecord] = field(default_factory=dict)
    table: RepoSymbols = field(default_factory=RepoSymbols)
    dependents: dict[str, set[str]] = field(default_factory=dict)  # dep name -> paths
    unresolved_refs: dict[str, set[str]] = field(default_factory=dict)  # unresolved node id -> paths
    dirty: set[str] = field(default_factory=set)  # paths whose record changed since take_changes()

    def index(self, path: str, old: FileRecord | None, new: FileRecord | None) -> None:
        """Move ``path`` in the reverse indexes from ``old``'s deps and refs to ``new``'s."""
        if old is not None:
            for dep in old.deps:
                self.dependents.get(dep, set()).discard(path)
            for node_id in old.unresolved:
                self.unresolved_refs.get(node_id, set()).discard(path)
        if new is not None:
            for dep in new.deps:
                self.dependents.setdefault(dep, set()).add(path)
            for node_id in new.unresolved:
                self.unresolved_refs.setdefault(node_id, set()).add(path)

    def take_changes(self) -> dict[str, JSONDict | None]:
        """The records changed since the last call (None: the file is gone), for a changelogged
        table keyed by (repo, path): one repo's whole state can be megabytes, one file's is small."""
        out = {path: (self.files[path].to_dict() if path in self.files else None) for path in sorted(self.dirty)}
        self.dirty.clear()
        return out

    @staticmethod
    def from_records(repo: str, records: dict[str, JSONDict]) -> RepoCodeState:
        """Rebuild from per-file records (what ``take_changes`` handed out, latest per path)."""
        return RepoCodeState.from_dict({"version": STATE_VERSION, "repo": repo, "files": dict(records)})

    def to_dict(self) -> JSONDict:
        return {
            "version": STATE_VERSION,
            "repo": self.repo,
            "files": {path: rec.to_dict() for path, rec in sorted(self.files.items())},
        }

    @staticmethod
    def from_dict(data: JSONDict) -> RepoCodeState:
        if data.get("version") != STATE_VERSION:
            msg = f"unsupported code state version {data.get('version')!r}"
            raise CodeStateError(msg)
        state = RepoCodeState(repo=str(data.get("repo", "")))
        for path, raw in _mapping(data, "files").items():
            if not isinstance(raw, dict):
                msg = f"bad file record for {path!r}"
                raise CodeStateError(msg)
            record = FileRecord.from_dict(raw)
            state.files[path] = record
            state.table.add(record.symbols)
            state.index(path, None, record)
        return state


def _mapping(data: JSONDict, key: str) -> dict[str, JSONValue]:
    value = data.get(key, {})
    if not isinstance(value, dict):
        msg = f"{key!r} is not a mapping"
        raise CodeStateError(msg)
    return value


def _pairs(data: JSONDict, key: str) -> list[tuple[str, list[JSONValue]]]:
    return [(k, _seq(v)) for k, v in _mapping(data, key).items()]


def _seq(value: JSONValue) -> list[JSONValue]:
    if not isinstance(value, list):
        msg = f"expected a list, got {value!r}"
        raise CodeStateError(msg)
    return value


def _edge(value: list[JSONValue]) -> EdgeKey:
    if len(value) != 3:
        msg = f"bad edge {value!r}"
        raise CodeStateError(msg)
    return str(value[0]), str(value[1]), str(value[2])
