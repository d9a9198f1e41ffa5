"""One file's share of the code graph: its nodes (module, definitions, chunks) and its edges.

Nodes and the CONTAINS / HAS_METHOD edges inside the file depend only on the file's own text;
INHERITS, CALLS, IMPORTS (and HAS_METHOD to a type declared in another file, as Go allows) depend on
the repo's symbol table and are recomputed when a module this file depends on changes. Node ids are
uuid5(repo, qualname, kind), so an entity that survives an edit keeps its id.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from engram.processors.code.chunks import BALANCED, Chunk, ChunkingConfig
from engram.processors.code.ids import entity_id
from engram.processors.code.model import Definition, FileSymbols
from engram.processors.code.symbols import FileResolver, RepoSymbols
from engram.processors.tokens import TokenCounter
from engram.schemas.events import edge_upserted, node_upserted, stable_id
from engram.schemas.records import EdgeUpserted, Layer, NodeUpserted

MODULE: Final = "code_module"
CLASS: Final = "code_class"
FUNCTION: Final = "code_function"
METHOD: Final = "code_method"
CHUNK: Final = "code_chunk"
UNRESOLVED: Final = "code_unresolved"
NODE_KINDS: Final = {"class": CLASS, "function": FUNCTION, "method": METHOD}
CONTAINS: Final = "CONTAINS"
CALLS: Final = "CALLS"
INHERITS: Final = "INHERITS"
IMPORTS: Final = "IMPORTS"
HAS_METHOD: Final = "HAS_METHOD"
CAUSAL: Final = "CAUSAL"


@dataclass(frozen=True, slots=True)
class CodeGraphConfig:
    chunking: ChunkingConfig = BALANCED
    max_entity_lines: int = 200  # longer bodies are cut in the node text (the span stays exact)
    max_calls_listed: int = 24


@dataclass(frozen=True, slots=True)
class NodeContext:
    """Where the nodes come from: the CodeChange's repo, layer, time, author and layer instance."""

    repo: str
    layer: Layer
    event_time_ms: int
    user_id: str | None = None
    session_id: str | None = None
    instance: str | None = None


@dataclass(slots=True)
class ResolvedEdges:
    edges: dict[str, EdgeUpserted] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)  # node id -> name
    deps: set[str] = field(default_factory=set)


def top_scope(symbols: FileSymbols) -> str:
    return symbols.package if symbols.language in ("java", "go") else symbols.module


def module_id(repo: str, symbols: FileSymbols) -> str:
    return entity_id(repo, symbols.module, MODULE)


def file_nodes(
    ctx: NodeContext,
    symbols: FileSymbols,
    text: str,
    chunks: list[Chunk],
    counter: TokenCounter,
    config: CodeGraphConfig,
) -> tuple[dict[str, NodeUpserted], dict[str, EdgeUpserted]]:
    """The file's nodes and its text-only edges (CONTAINS, same-file HAS_METHOD)."""
    lines = text.splitlines()
    nodes: dict[str, NodeUpserted] = {}
    edges: dict[str, EdgeUpserted] = {}
    mod_id = module_id(ctx.repo, symbols)
    base = {"repo": ctx.repo, "path": symbols.path, "language": symbols.language}
    module_text = _module_text(symbols)
    nodes[mod_id] = _node(
        ctx,
        mod_id,
        MODULE,
        module_text,
        counter,
        {
            **base,
            "qualname": symbols.module,
            "name": symbols.module,
            "start_line": "1",
            "end_line": str(symbols.line_count),
        },
    )
    local = {d.qualname: d for d in symbols.definitions}
    calls_by_scope: dict[str, list[str]] = {}
    for call in symbols.calls:
        listed = calls_by_scope.setdefault(call.scope, [])
        if call.callee not in listed and len(listed) < config.max_calls_listed:
            listed.append(call.callee)
    for d in symbols.definitions:
        kind = NODE_KINDS[d.kind]
        node_id = entity_id(ctx.repo, d.qualname, kind)
        body = _class_text(d, symbols, lines, config) if d.kind == "class" else _def_text(d, symbols, lines, config)
        nodes[node_id] = _node(
            ctx, node_id, kind, body, counter, {**base, **_def_properties(d, calls_by_scope.get(d.qualname, []))}
        )
        parent = local.get(d.parent)
        if parent is None:
            _add(edges, edge_upserted(CONTAINS, mod_id, node_id, ctx.layer))
        else:
            src = entity_id(ctx.repo, parent.qualname, NODE_KINDS[parent.kind])
            rel = HAS_METHOD if d.kind == "method" and parent.kind == "class" else CONTAINS
            _add(edges, edge_upserted(rel, src, node_id, ctx.layer))
    for chunk_id, chunk in _chunk_ids(ctx.repo, symbols, chunks):
        props = {**base, **_chunk_properties(chunk)}
        nodes[chunk_id] = _node(
            ctx, chunk_id, CHUNK, chunk.breadcrumb(symbols.path) + "\n" + chunk.code, counter, props
        )
        owner = local.get(chunk.scope)
        src = entity_id(ctx.repo, owner.qualname, NODE_KINDS[owner.kind]) if owner else mod_id
        _add(edges, edge_upserted(CONTAINS, src, chunk_id, ctx.layer))
    return nodes, edges


def resolved_edges(repo: str, layer: Layer, symbols: FileSymbols, table: RepoSymbols) -> ResolvedEdges:
    """INHERITS, CALLS, IMPORTS and cross-file HAS_METHOD; unresolved targets become their own nodes."""
    out = ResolvedEdges()
    resolver = FileResolver(table, symbols)
    mod_id = module_id(repo, symbols)
    local = {d.qualname: d for d in symbols.definitions}

    def target_id(qualname: str, resolved: bool, kind: str) -> str:
        if resolved and kind in NODE_KINDS:
            return entity_id(repo, qualname, NODE_KINDS[kind])
        node_id = entity_id(repo, qualname, UNRESOLVED)
        out.unresolved[node_id] = qualname
        return node_id

    def scope_id(scope: str) -> str:
        d = local.get(scope)
        return entity_id(repo, d.qualname, NODE_KINDS[d.kind]) if d else mod_id

    for d in symbols.definitions:
        src = entity_id(repo, d.qualname, NODE_KINDS[d.kind])
        for base in d.bases:
            r = resolver.resolve(d.parent, base)
            _add(
                out.edges,
                edge_upserted(INHERITS, src, target_id(r.qualname, r.resolved, "class" if r.resolved else ""), layer),
            )
        if d.kind == "method" and d.parent not in local:
            owner = table.defs.get(d.parent)
            if owner is not None and owner.kind == "class":
                out.deps.add(table.module_of(d.parent))
            resolved = owner is not None and owner.kind == "class"
            _add(out.edges, edge_upserted(HAS_METHOD, target_id(d.parent, resolved, "class"), src, layer))
    for call in symbols.calls:
        r = resolver.resolve(call.scope, call.callee)
        _add(out.edges, edge_upserted(CALLS, scope_id(call.scope), target_id(r.qualname, r.resolved, r.kind), layer))
    for dst in _imported_modules(repo, symbols, table, resolver, out):
        if dst != mod_id:
            _add(out.edges, edge_upserted(IMPORTS, mod_id, dst, layer))
    out.deps |= resolver.deps
    out.deps.discard("")
    return out


def _imported_modules(
    repo: str, symbols: FileSymbols, table: RepoSymbols, resolver: FileResolver, out: ResolvedEdges
) -> Iterable[str]:
    for binding in symbols.imports:
        module = _file_module(table, binding.target)
        if not module:
            r = resolver.canonical(binding.target)
            module = table.module_of(r.qualname) if r.resolved else ""
        if not module:
            name = binding.raw if symbols.language == "python" and ":" not in binding.raw else binding.target
            if ":" in binding.raw or symbols.language == "java":
                name = name.rsplit(".", 1)[0] if "." in name else name
            module = _file_module(table, name)
            if not module:
                node_id = entity_id(repo, name, UNRESOLVED)
                out.unresolved[node_id] = name
                yield node_id
                continue
        yield entity_id(repo, module, MODULE)


def _file_module(table: RepoSymbols, name: str) -> str:
    """``name`` when it is the module of a file in the repo (not just a package prefix), else ''."""
    return name if name in table.file_modules else ""


def _add(edges: dict[str, EdgeUpserted], edge: EdgeUpserted) -> None:
    edges.setdefault(edge["edge_id"], edge)


def _node(
    ctx: NodeContext, node_id: str, kind: str, text: str, counter: TokenCounter, properties: dict[str, str]
) -> NodeUpserted:
    return node_upserted(
        node_id,
        kind,
        ctx.layer,
        ctx.event_time_ms,
        text=text,
        tokens=counter.count(text),
        user_id=ctx.user_id,
        session_id=ctx.session_id,
        properties=properties,
        instance=ctx.instance,
    )


def _def_properties(d: Definition, calls: list[str]) -> dict[str, str]:
    return {
        "qualname": d.qualname,
        "name": d.name,
        "parent": d.parent,
        "start_line": str(d.start_line),
        "end_line": str(d.end_line),
        "signature": d.signature,
        "bases": ",".join(d.bases),
        "calls": ",".join(calls),
    }


def _chunk_properties(chunk: Chunk) -> dict[str, str]:
    return {
        "start_line": str(chunk.start_line),
        "end_line": str(chunk.end_line),
        "scope": chunk.scope,
        "parent_class": chunk.parent_class,
        "signature": chunk.signature,
        "bases": ",".join(chunk.bases),
        "calls": ",".join(chunk.calls),
        "members": ",".join(chunk.members),
    }


def _chunk_ids(repo: str, symbols: FileSymbols, chunks: list[Chunk]) -> list[tuple[str, Chunk]]:
    """A chunk is named by its scope and first member (or its content), not its position, so an
    edit elsewhere in the file leaves its id alone."""
    seen: dict[str, int] = {}
    out: list[tuple[str, Chunk]] = []
    for chunk in chunks:
        anchor = chunk.members[0] if chunk.members else stable_id(chunk.code)
        key = f"{symbols.path}#{chunk.scope}#{anchor}"
        seen[key] = seen.get(key, 0) + 1
        out.append((entity_id(repo, f"{key}#{seen[key]}", CHUNK), chunk))
    return out


def _header(symbols: FileSymbols, d: Definition) -> str:
    return f"# {symbols.path}:{d.start_line}-{d.end_line} ({symbols.language}) {d.qualname}"


def _def_text(d: Definition, symbols: FileSymbols, lines: list[str], config: CodeGraphConfig) -> str:
    body = lines[d.start_line - 1 : min(d.end_line, d.start_line - 1 + config.max_entity_lines)]
    cut = ["…"] if d.end_line - d.start_line + 1 > config.max_entity_lines else []
    return "\n".join([_header(symbols, d), *body, *cut])


def _class_text(d: Definition, symbols: FileSymbols, lines: list[str], config: CodeGraphConfig) -> str:
    """The class with the bodies of its members elided: signature, class-level lines, member signatures."""
    hidden: set[int] = set()
    for child in symbols.definitions:
        if child.parent == d.qualname:
            hidden.update(range(child.start_line + 1, child.end_line + 1))
    kept = [lines[i - 1] for i in range(d.start_line, min(d.end_line, len(lines)) + 1) if i not in hidden]
    cut = ["…"] if len(kept) > config.max_entity_lines else []
    return "\n".join([_header(symbols, d), *kept[: config.max_entity_lines], *cut])


def _module_text(symbols: FileSymbols) -> str:
    tops = [d.signature for d in symbols.definitions if d.parent == top_scope(symbols)]
    imports = sorted({b.target for b in symbols.imports})
    return "\n".join(
        [f"# module {symbols.module} ({symbols.path}, {symbols.language}, {symbols.line_count} lines)"]
        + ([f"# imports: {', '.join(imports[:40])}"] if imports else [])
        + tops
    )
