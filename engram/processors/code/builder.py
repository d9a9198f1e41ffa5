"""CodeChange -> MemoryEvents: the incremental code graph of one repo.

``apply`` replaces one file (or removes it when ``deleted``), diffs the file's old and new nodes and
edges, re-resolves only the files whose names depend on a module whose interface changed, and emits
only what changed, in an order a sink can apply as it goes: EdgeRemoved, NodeRemoved, NodeUpserted,
EdgeUpserted. A change with ``causal_parent_ids`` also gets CAUSAL edges from those turns (cause ->
effect, the Trace's direction and turn ids) to the file's module and every entity it upserted, so
"why did this method change?" walks back to the conversation.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from engram.processors.code.chunks import chunk_file
from engram.processors.code.extract import extract_with_tree
from engram.processors.code.file_graph import (
    CAUSAL,
    CHUNK,
    UNRESOLVED,
    CodeGraphConfig,
    NodeContext,
    file_nodes,
    module_id,
    resolved_edges,
)
from engram.processors.code.impact import InterfaceDelta, affected_files, interface_delta
from engram.processors.code.model import FileSymbols
from engram.processors.code.state import EdgeKey, FileRecord, RepoCodeState
from engram.processors.tokens import TokenCounter
from engram.processors.trace.builder import event_node_id
from engram.schemas.events import edge_removed, edge_upserted, memory_event, node_removed, node_upserted, stable_id
from engram.schemas.records import (
    EDGE_REMOVED,
    EDGE_UPSERTED,
    NODE_REMOVED,
    NODE_UPSERTED,
    CodeChange,
    EdgeUpserted,
    EventRef,
    Layer,
    MemoryEvent,
    NodeUpserted,
)


def turn_node_id(user_id: str | None, turn_id: str) -> str:
    """The graph id of a conversation turn, as the Trace names it (``event_node_id``); a change with
    no user keeps the raw parent id, as the Trace's own ``code_file`` linking does."""
    return event_node_id(user_id, turn_id) if user_id is not None else turn_id


@dataclass(slots=True)
class _Diff:
    """What changed, each item with the sources and time of the change that caused it."""

    sources: list[EventRef] = field(default_factory=list)
    time_ms: int = 0
    edge_removed: list[tuple[EdgeKey, list[EventRef], int]] = field(default_factory=list)
    node_removed: list[tuple[str, str, list[EventRef], int]] = field(default_factory=list)  # (id, kind, ...)
    node_upserted: list[tuple[NodeUpserted, list[EventRef], int]] = field(default_factory=list)
    edge_upserted: list[tuple[EdgeUpserted, list[EventRef], int]] = field(default_factory=list)

    def remove_edges(self, keys: Iterable[EdgeKey]) -> None:
        self.edge_removed.extend((k, self.sources, self.time_ms) for k in keys)

    def remove_nodes(self, nodes: Iterable[tuple[str, str]]) -> None:
        self.node_removed.extend((i, kind, self.sources, self.time_ms) for i, kind in nodes)

    def upsert_nodes(self, nodes: Iterable[NodeUpserted]) -> None:
        self.node_upserted.extend((n, self.sources, self.time_ms) for n in nodes)

    def upsert_edges(self, edges: Iterable[EdgeUpserted]) -> None:
        self.edge_upserted.extend((e, self.sources, self.time_ms) for e in edges)


@dataclass(slots=True)
class _Parsed:
    change: CodeChange
    ref: EventRef
    symbols: FileSymbols
    nodes: dict[str, NodeUpserted]
    static: dict[str, EdgeUpserted]


class CodeGraphBuilder:
    """Holds one RepoCodeState per repo. Pure: no I/O; the state round-trips through ``state_dict``."""

    def __init__(self, counter: TokenCounter, config: CodeGraphConfig | None = None) -> None:
        self.counter = CachedCounter(counter)
        self.config = config or CodeGraphConfig()
        self.repos: dict[str, RepoCodeState] = {}

    def state(self, repo: str) -> RepoCodeState:
        return self.repos.setdefault(repo, RepoCodeState(repo))

    def load(self, repo: str, state: RepoCodeState) -> None:
        self.repos[repo] = state

    def apply(self, change: CodeChange, ref: EventRef) -> list[MemoryEvent]:
        return self.apply_batch([(change, ref)])

    def apply_batch(self, changes: Sequence[tuple[CodeChange, EventRef]]) -> list[MemoryEvent]:
        """Apply changes of one repo in order; cross-file resolution runs once for the whole batch."""
        events: list[MemoryEvent] = []
        by_repo: dict[str, list[tuple[CodeChange, EventRef]]] = {}
        for change, ref in changes:
            by_repo.setdefault(change["repo"], []).append((change, ref))
        for repo, items in by_repo.items():
            events.extend(apply_changes(self.state(repo), items, self.counter, self.config))
        return events


class CachedCounter:
    """Token counts of recently seen texts: an edit re-renders every node of its file, but most of
    their texts are unchanged, so their counts are reused. Bounded; cleared when full."""

    def __init__(self, counter: TokenCounter, capacity: int = 200_000) -> None:
        self.counter = counter
        self.capacity = capacity
        self.cache: dict[str, int] = {}

    def count(self, text: str) -> int:
        found = self.cache.get(text)
        if found is None:
            if len(self.cache) >= self.capacity:
                self.cache.clear()
            found = self.cache[text] = self.counter.count(text)
        return found


def apply_changes(
    state: RepoCodeState,
    changes: Sequence[tuple[CodeChange, EventRef]],
    counter: TokenCounter,
    config: CodeGraphConfig,
) -> list[MemoryEvent]:
    """The whole incremental step over an explicit state (what a Faust agent calls with its table)."""
    latest: dict[str, tuple[CodeChange, EventRef]] = {}
    for change, ref in changes:
        latest[change["path"]] = (change, ref)  # the last content of a file in the batch wins
    old_records = {path: state.files.get(path) for path in latest}
    # Parse everything first: an unsupported file raises before the state is touched.
    parsed = {path: _parse(c, r, counter, config) for path, (c, r) in latest.items() if not c["deleted"]}
    for path in latest:
        state.table.remove(path)
        if path in parsed:
            state.table.add(parsed[path].symbols)
    deltas: list[InterfaceDelta] = []
    changed_interface: set[str] = set()
    for path, old in old_records.items():
        new = parsed[path].symbols if path in parsed else None
        if old is None or new is None or old.interface != _interface(new):
            changed_interface.add(path)
            deltas.append(interface_delta(state.repo, old.symbols if old else None, new))
    affected = affected_files(state, deltas, set(latest))  # before the records change
    diff = _Diff()
    for path, (change, ref) in latest.items():
        diff.sources, diff.time_ms = [ref], change["event_time_ms"]
        _replace_file(state, path, parsed.get(path), change, diff)
    diff.sources = [ref for path, (_c, ref) in latest.items() if path in changed_interface]
    diff.time_ms = max(c["event_time_ms"] for c, _r in latest.values())
    for path in sorted(affected):
        _reresolve(state, path, diff)
    return _events(state, diff, changes)


def _parse(change: CodeChange, ref: EventRef, counter: TokenCounter, config: CodeGraphConfig) -> _Parsed:
    symbols, tree = extract_with_tree(change["path"], change["content"], change["language"])
    chunks = chunk_file(symbols, tree, change["content"].encode("utf-8"), counter, config.chunking)
    ctx = NodeContext(
        change["repo"], change["layer"], change["event_time_ms"], change["user_id"], change["session_id"],
        change.get("instance"),
    )  # fmt: skip
    nodes, static = file_nodes(ctx, symbols, change["content"], chunks, counter, config)
    return _Parsed(change, ref, symbols, nodes, static)


def _replace_file(state: RepoCodeState, path: str, new: _Parsed | None, change: CodeChange, diff: _Diff) -> None:
    old = state.files.pop(path, None)
    state.dirty.add(path)
    record: FileRecord | None = None
    if new is not None:
        layer = change["layer"]
        resolved = resolved_edges(state.repo, layer, new.symbols, state.table)
        record = FileRecord(
            symbols=new.symbols,
            layer=layer,
            nodes={k: (n["kind"], _digest(n)) for k, n in new.nodes.items()},
            static_edges={k: _key(e) for k, e in new.static.items()},
            edges={k: _key(e) for k, e in resolved.edges.items()},
            unresolved=resolved.unresolved,
            deps=resolved.deps,
            interface=_interface(new.symbols),
        )
        state.files[path] = record
        old_nodes = old.nodes if old else {}
        diff.upsert_nodes(n for k, n in new.nodes.items() if old_nodes.get(k) != record.nodes[k])
        _diff_edges(old.all_edges() if old else {}, {**new.static, **resolved.edges}, diff)
    elif old is not None:
        _diff_edges(old.all_edges(), {}, diff)
    if old is not None:
        kept = record.nodes if record else {}
        diff.remove_nodes((k, kind) for k, (kind, _d) in old.nodes.items() if k not in kept)
    _move_unresolved(state, path, old, record, diff)


def _reresolve(state: RepoCodeState, path: str, diff: _Diff) -> None:
    old = state.files[path]
    state.dirty.add(path)
    resolved = resolved_edges(state.repo, old.layer, old.symbols, state.table)
    record = FileRecord(
        old.symbols,
        old.layer,
        old.nodes,
        old.static_edges,
        {k: _key(e) for k, e in resolved.edges.items()},
        resolved.unresolved,
        resolved.deps,
        old.interface,
    )
    state.files[path] = record
    _diff_edges(old.edges, resolved.edges, diff)
    _move_unresolved(state, path, old, record, diff)


def _move_unresolved(
    state: RepoCodeState, path: str, old: FileRecord | None, new: FileRecord | None, diff: _Diff
) -> None:
    """Unresolved nodes are shared by the files that call them: upsert on the first, remove after the last."""
    old_ids = set(old.unresolved) if old else set()
    new_ids = set(new.unresolved) if new else set()
    state.index(path, old, new)
    for node_id in sorted(old_ids - new_ids):
        if not state.unresolved_refs.get(node_id):
            state.unresolved_refs.pop(node_id, None)
            diff.remove_nodes([(node_id, UNRESOLVED)])
    for node_id in sorted(new_ids - old_ids):
        if state.unresolved_refs.get(node_id) == {path} and new is not None:
            node = _unresolved_node(state.repo, node_id, new.unresolved[node_id], new.layer, diff.time_ms)
            diff.upsert_nodes([node])


def _unresolved_node(repo: str, node_id: str, name: str, layer: Layer, time_ms: int) -> NodeUpserted:
    props = {"repo": repo, "qualname": name, "name": name.rsplit(".", 1)[-1]}
    return node_upserted(node_id, UNRESOLVED, layer, time_ms, text=name, tokens=0, properties=props)


def _diff_edges(old: dict[str, EdgeKey], new: dict[str, EdgeUpserted], diff: _Diff) -> None:
    diff.remove_edges(v for k, v in old.items() if k not in new)
    diff.upsert_edges(e for k, e in new.items() if k not in old)


def _events(state: RepoCodeState, diff: _Diff, changes: Sequence[tuple[CodeChange, EventRef]]) -> list[MemoryEvent]:
    """The diff as MemoryEvents, then CAUSAL edges for every change of the batch that names turns
    (a file changed twice in one batch is diffed once, but both changes' turns are linked)."""
    key, why = state.repo, "code changed"
    out = [memory_event(key, t, refs, EDGE_REMOVED, edge_removed(*e, why)) for e, refs, t in diff.edge_removed]
    out += [memory_event(key, t, refs, NODE_REMOVED, node_removed(i, k, why)) for i, k, refs, t in diff.node_removed]
    out += [memory_event(key, t, refs, NODE_UPSERTED, n) for n, refs, t in diff.node_upserted]
    out += [memory_event(key, t, refs, EDGE_UPSERTED, e) for e, refs, t in diff.edge_upserted]
    upserted = {n["node_id"] for n, _r, _t in diff.node_upserted if n["kind"] not in (CHUNK, UNRESOLVED)}
    for change, ref in changes:
        record = state.files.get(change["path"])
        if record is None or not change["causal_parent_ids"]:
            continue
        mod = module_id(state.repo, record.symbols)
        effects = sorted({mod} | (upserted & set(record.nodes)))
        props = {"change_id": change["change_id"], "commit": change["commit"], "path": change["path"]}
        for turn in dict.fromkeys(change["causal_parent_ids"]):
            cause = turn_node_id(change["user_id"], turn)
            for effect in effects:  # cause -> effect, as the Trace draws CAUSAL
                edge = edge_upserted(CAUSAL, cause, effect, change["layer"], properties=props)
                out.append(memory_event(key, change["event_time_ms"], [ref], EDGE_UPSERTED, edge, change["change_id"]))
            if change["user_id"] is not None:
                out.append(_to_the_user(change, cause, mod, props, ref))
    return out


def _to_the_user(change: CodeChange, cause: str, module: str, props: dict[str, str], ref: EventRef) -> MemoryEvent:
    """The turn -> module CAUSAL edge once more, keyed by the turn's user: the user's partition (and
    its dream step) must see that the turn has a consequence, or eq. 15 would let the turn go
    dormant. The same edge id, so every store applies it once."""
    user = str(change["user_id"])
    edge = edge_upserted(CAUSAL, cause, module, change["layer"], properties=props)
    return memory_event(user, change["event_time_ms"], [ref], EDGE_UPSERTED, edge, f"{change['change_id']}:user")


def _digest(node: NodeUpserted) -> str:
    """Content digest for diffing only (not an id): blake2b is cheaper than uuid5 on long texts."""
    props = "\x1e".join(f"{k}={v}" for k, v in sorted(node["properties"].items()))
    raw = "\x1f".join((node["kind"], node["layer"], str(node["tokens"]), node["text"], props))
    return hashlib.blake2b(raw.encode("utf-8"), digest_size=16).hexdigest()


def _interface(symbols: FileSymbols) -> str:
    defs = sorted(f"{d.kind}:{d.qualname}:{','.join(d.bases)}" for d in symbols.definitions)
    imports = sorted(f"{b.local}={b.target}" for b in symbols.imports)
    variables = sorted(f"{t.name}={t.type_expr}" for t in symbols.local_types if t.scope == symbols.module)
    return stable_id(symbols.module, symbols.package, *defs, "|", *imports, "|", *variables)


def _key(edge: EdgeUpserted) -> EdgeKey:
    return edge["edge_type"], edge["src"], edge["dst"]
