"""A user's dream memory as table records: what changed is written, not the whole history.

One record per user would grow with everything the user ever said, and every batch that touches
the user would rewrite (and changelog) all of it. The memory is kept in parts instead, each a key
of the dream step's table:
- chunk ``c<i>``: the episodes of arrival ``i * CHUNK_EPISODES`` on, with their outgoing NEXT and
  CAUSAL edges, written when the fold changed one of them (``DreamGraph.dirty``);
- ``dreams``: the nodes dreaming made, the candidates it rejected and the NEXT edges it
  contracted, written when a dream (or their echo) changed them;
- the head, key ``<user>``: everything else (concepts, active facts, what the step has applied and
  is waiting for, the TOC's pending periods, the edges out of nodes that are not episodes) and
  which slot holds each part.
A part is double-buffered: ``<user>\\x00<part>/<slot>``, slot 0 or 1. A write puts the changed parts
in their other slot, then the head that names them, then deletes the slots they left, all at the
user's partition in that order. A crash in between leaves a head that names only parts written
before it, whole: the batch comes again to exactly the memory of before it (the old slots are
intact), and a slot left over is overwritten by the next write of its part.
The time hierarchy is not stored: it is a function of the episodes, rebuilt when a memory is read.
A head without ``"v"`` is the older whole record: it is read as such, and every part is written
at the next write. A head of version 2 named its chunks ``<i>``, of 256 episodes: it is read
whole, the next write puts every chunk under its new name, and the old chunks' slots are deleted
after the new head (no slot the old head names is written before it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.rows import episode_row
from engram.processors.toc import TocIndex

VERSION: Final = 3
DREAMS: Final = "dreams"
CHUNK_PREFIX: Final = "c"  # version 3's chunk names; version 2's were bare numbers
_HEAD_GRAPH: Final = ("user_id", "concepts", "facts", "early_refs", "retracted_turns", "arrivals")  # graph parts
_DREAMS_GRAPH: Final = ("consolidated", "rejected", "contracted")

Record = dict[str, Any]


def part_key(user: str, part: str, slot: int) -> str:
    """The table key of one slot of a part (``DREAMS`` or a chunk's name, `chunk_part`)."""
    return f"{user}\x00{part}/{slot}"


def chunk_part(chunk: int) -> str:
    return f"{CHUNK_PREFIX}{chunk}"


def _chunk_number(part: str) -> int:
    return int(part.removeprefix(CHUNK_PREFIX))


def memory_records(memory: UserMemory) -> list[tuple[str, Record | None]]:
    """(key, record) of every part the memory changed since its last write, in its free slot; then
    the head; then (key, None) for each slot left. The changes are then taken as written."""
    graph, user = memory.graph, memory.user_id
    changed = {chunk_part(chunk): _chunk(graph, chunk) for chunk in sorted(graph.dirty)}
    if graph.dreams_dirty:
        changed[DREAMS] = graph.to_dict(parts=_DREAMS_GRAPH)
    left = {part: memory.parts[part] for part in changed if part in memory.parts}
    memory.parts |= {part: 1 - left.get(part, 1) for part in changed}
    out: list[tuple[str, Record | None]] = [(part_key(user, p, memory.parts[p]), r) for p, r in changed.items()]
    head = graph.to_dict(parts=_HEAD_GRAPH) | {"loose": _loose(graph)}
    out.append((user, {"v": VERSION, "graph": head, **memory.to_dict(whole=False), "parts": dict(memory.parts),
                       "toc_changed": sorted(memory.toc.changed)}))  # fmt: skip
    out.extend((part_key(user, part, slot), None) for part, slot in left.items())
    out.extend((key, None) for key in memory.retired)
    memory.retired = []
    graph.dirty.clear()
    graph.dreams_dirty = False
    return out


def read_memory(user: str, states: Mapping[str, Record]) -> UserMemory | None:
    """The user's memory as the table holds it (None: nothing yet)."""
    head = states.get(user)
    if not head:
        return None
    if "v" not in head:  # the older whole record: write every part next time
        memory = UserMemory.from_dict(head)
        memory.graph.dirty = set(memory.graph.members)
        memory.graph.dreams_dirty = True
        return memory
    parts = {str(p): int(s) for p, s in head["parts"].items()}
    memory = _from_parts(user, head, parts, states)
    if head["v"] < VERSION:  # chunks under their old names and size: all written anew, the old deleted after
        memory.graph.dirty = set(memory.graph.members)
        memory.retired = [part_key(user, p, slot) for p in parts if p != DREAMS for slot in (0, 1)]
        memory.parts = {p: slot for p, slot in parts.items() if p == DREAMS}
    return memory


def _from_parts(user: str, head: Record, parts: dict[str, int], states: Mapping[str, Record]) -> UserMemory:
    top = head["graph"]
    whole: Record = {k: top[k] for k in _HEAD_GRAPH}
    whole |= {"next": list(top["loose"]["next"]), "causal": list(top["loose"]["causal"]), "episodes": []}
    for name in sorted((p for p in parts if p != DREAMS), key=_chunk_number):
        part = states[part_key(user, name, parts[name])]
        for k in ("episodes", "next", "causal"):
            whole[k].extend(part[k])
    whole |= states[part_key(user, DREAMS, parts[DREAMS])] if DREAMS in parts else _empty_dreams()
    graph = DreamGraph.from_dict(whole)
    toc = TocIndex(user)
    for e in graph.episodes.values():
        toc.add(e.node_id, e.time_ms, e.session_id)
    toc.changed = set(head["toc_changed"])
    memory = UserMemory.from_dict(head, graph, toc)
    memory.parts = parts
    return memory


def erased(user: str, states: Mapping[str, Record]) -> list[str]:
    """The part keys an erasure of the user must delete, both slots of each (its head is replaced)."""
    head = states.get(user) or {}
    return [part_key(user, part, slot) for part in head.get("parts", {}) for slot in (0, 1)]


def held(states: Mapping[str, Any]) -> dict[str, Any]:
    """What a dream table holds, independent of how it was written: each user's memory whole
    (``UserMemory.to_dict``) at its head's key, other records (the schedules) as they are, and no
    parts (which slot holds a part depends on the history of writes, not on the memory)."""
    out: dict[str, Any] = {}
    for key, state in states.items():
        if isinstance(state, dict) and "v" in state:
            memory = read_memory(key, states)
            out[key] = memory.to_dict() if memory is not None else None
        elif state is not None and key.find("\x00", 1) < 0:
            out[key] = state
    return out


def _empty_dreams() -> Record:
    return {"consolidated": [], "rejected": {}, "contracted": []}


def _chunk(graph: DreamGraph, chunk: int) -> Record:
    """One chunk's episodes with their outgoing NEXT and CAUSAL edges."""
    ids = list(graph.members.get(chunk, ()))
    return {
        "episodes": [episode_row(graph.episodes[i]) for i in ids],
        "next": [[s, d] for s in ids for d in sorted(graph.next_out.get(s, ()))],
        "causal": [[s, d] for s in ids for d in sorted(graph.causal_out.get(s, ()))],
    }


def _loose(graph: DreamGraph) -> dict[str, list[list[str]]]:
    """The NEXT and CAUSAL edges out of nodes that are not (yet) episodes. From the graph's few
    loose sources, not a difference of every edge source with the episodes: the head is written on
    every batch that touches the user, and that difference grew with the history (py-spy: 17% of
    the worker's CPU at 260,000 turns over 50 users)."""
    loose = graph.loose_sources()

    def out_of(edges: dict[str, set[str]]) -> list[list[str]]:
        return [[s, d] for s in loose for d in sorted(edges.get(s, ()))]

    return {"next": out_of(graph.next_out), "causal": out_of(graph.causal_out)}
