"""A user's dream memory as table records: what changed is written, not the whole history.

One record per user would grow with everything the user ever said, and every batch that touches
the user would rewrite (and changelog) all of it. The memory is kept in parts instead, each a key
of the dream step's table:
- chunk ``c<i>``: the episodes of arrival ``i * CHUNK_EPISODES`` on, with their outgoing NEXT and
  CAUSAL edges, written when the fold changed one of them (``DreamGraph.dirty``);
- chunk ``g<i>``: what dreaming made (its nodes, the candidates it rejected, the NEXT edges it
  contracted) of arrival ``i * MADE_CHUNK`` on (made.py), written when a dream (or its echo)
  changed one of them: a dream rewrites what it made, not all dreaming ever made;
- chunk ``k<i>``: the citations of those nodes (their CITES and ABOUT edges) of arrival
  ``i * CITE_CHUNK`` on (made.CitedChunks): a dream that revisits a gist writes the chunks of its
  new citations, not all of them again;
- chunks ``n<i>``: the concepts (label, committed), ``CONCEPT_CHUNK`` a chunk by arrival
  (chunks.py), written when one of them comes or changes;
- chunks ``p<i>`` and ``e<i>``: the ids of dreaming's events not come back yet, and of the latest
  that did, ``ECHO_CHUNK`` a chunk by arrival (chunks.py): written when an id comes or goes, deleted
  when empty;
- the head, key ``<user>``: everything else (active facts, what the step has applied and
  is waiting for, the TOC's pending periods, the edges out of nodes that are not episodes) and
  which slot holds each part.
A part is double-buffered (processors/parts.py): the changed parts go to their other slot, then
the head that names them, then the slots left by parts that have stopped changing are deleted.
The time hierarchy is not stored: it is a function of the episodes, rebuilt when a memory is read.
A head without ``"v"`` is the older whole record: it is read as such, and every part is written
at the next write. A head of version 2 named its chunks ``<i>``, of 256 episodes: it is read
whole, the next write puts every chunk under its new name, and the old chunks' slots are deleted
after the new head (no slot the old head names is written before it). Versions 2 and 3 kept all
dreaming made in one part, ``dreams``, rewritten whole on each dream (its bytes grew with the
history: 1 KB a turn early in a 20,000-turn run over 5 users, 6.5 KB late): the next write puts
it in chunks and deletes that part's slots after the new head. Version 4 wrote a node's citations
in its row, so a dream rewrote them all with it (their bytes grew with the concept: what dreaming
made cost 0.8 KB a turn early in that run, 4.6 late): the next write puts them in their chunks and
writes each of its nodes' chunks anew without them. Version 5 kept the ids of the echoes in the head:
the next write puts them in their chunks. So did version 6 with the concepts.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from engram.processors.dreaming.chunks import IdChunks, concept_chunk
from engram.processors.dreaming.graph import DreamGraph
from engram.processors.dreaming.made import (
    CONTRACTED_ITEM,
    NODE_ITEM,
    REJECTED_ITEM,
    CitedChunks,
    made_chunk,
    made_ids,
    made_key,
)
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.rows import Consolidated, episode_row
from engram.processors.parts import Record, both_slots, flip, is_part_key, part_key, stale_parts
from engram.processors.toc import TocIndex

VERSION: Final = 7
DREAMS: Final = "dreams"  # versions 2 and 3: all dreaming made, in one part
CHUNK_PREFIX: Final = "c"  # the episodes' chunk names since version 3; version 2's were bare numbers
MADE_PREFIX: Final = "g"  # the chunks of what dreaming made (made.py), since version 4
CITE_PREFIX: Final = "k"  # the chunks of their citations (made.CitedChunks), since version 5
PENDING_PREFIX: Final = "p"  # the chunks of the ids of echoes waited for (chunks.py), since version 6
ECHOED_PREFIX: Final = "e"  # the chunks of the ids of the latest echoes, since version 6
CONCEPT_PREFIX: Final = "n"  # the chunks of the concepts (chunks.py), since version 7
USE_PREFIX: Final = "u"  # per episodes' chunk, the last access of those used (none before: never used)
_NUMBERED: Final = (
    MADE_PREFIX,
    CITE_PREFIX,
    PENDING_PREFIX,
    ECHOED_PREFIX,
    CONCEPT_PREFIX,
    USE_PREFIX,
)  # the parts that are not episodes
_HEAD_GRAPH: Final = ("user_id", "facts", "early_refs", "retracted_turns", "arrivals")  # graph parts


def chunk_part(chunk: int) -> str:
    return f"{CHUNK_PREFIX}{chunk}"


def made_part(chunk: int) -> str:
    return f"{MADE_PREFIX}{chunk}"


def cite_part(chunk: int) -> str:
    return f"{CITE_PREFIX}{chunk}"


def use_part(chunk: int) -> str:
    return f"{USE_PREFIX}{chunk}"


def _is_episode_chunk(part: str) -> bool:
    return part != DREAMS and part[0] not in _NUMBERED


def _chunk_number(part: str) -> int:
    return int(part.removeprefix(CHUNK_PREFIX))


def memory_records(memory: UserMemory) -> list[tuple[str, Record | None]]:
    """(key, record) of every part the memory changed since its last write, in its free slot; then
    the head; then (key, None) for each slot left by a part that stopped changing (processors/parts.py)
    and both slots of each part emptied. The changes are then taken as written."""
    graph, user = memory.graph, memory.user_id
    changed = {chunk_part(chunk): _chunk(graph, chunk) for chunk in sorted(graph.dirty)}
    changed |= {made_part(chunk): _made(graph, chunk) for chunk in sorted(graph.made.dirty)}
    changed |= {cite_part(chunk): _cited(graph, chunk) for chunk in sorted(graph.cited.dirty)}
    changed |= {use_part(chunk): _uses(graph, chunk) for chunk in sorted(graph.used)}
    ids, emptied = _id_parts(memory)
    written, left = flip(user, changed | ids, memory.parts, memory.stale)
    out: list[tuple[str, Record | None]] = list(written)
    out.append((user, _head(memory)))
    out.extend((key, None) for key in left + emptied)
    out.extend((key, None) for key in memory.retired)
    memory.retired = []
    graph.dirty.clear()
    graph.used.clear()
    graph.made.dirty.clear()
    graph.cited.dirty.clear()
    return out


def _id_parts(memory: UserMemory) -> tuple[dict[str, Record], list[str]]:
    """The chunks of ids (chunks.py) to write, and the keys of those left empty (to delete after
    the head, which no longer names them)."""
    changed: dict[str, Record] = {}
    emptied: list[str] = []
    chunked = (
        (PENDING_PREFIX, memory.pending),
        (ECHOED_PREFIX, memory.echoed),
        (CONCEPT_PREFIX, memory.graph.concept_chunks),
    )
    for prefix, ids in chunked:
        kept, gone = ids.written()
        record = _concepts if prefix == CONCEPT_PREFIX else _ids_record
        changed |= {f"{prefix}{chunk}": record(memory.graph, held) for chunk, held in kept.items()}
        names = [f"{prefix}{chunk}" for chunk in gone]
        emptied += both_slots(memory.user_id, [name for name in names if memory.parts.pop(name, None) is not None])
    return changed, emptied


def _head(memory: UserMemory) -> Record:
    graph = memory.graph
    arrivals = {"made_arrivals": graph.made.arrivals, "cite_arrivals": graph.cited.arrivals,
                "concept_arrivals": graph.concept_chunks.arrivals}  # fmt: skip
    return {"v": VERSION, "graph": graph.to_dict(parts=_HEAD_GRAPH) | {"loose": _loose(graph)},
            **memory.to_dict(whole=False), "parts": dict(memory.parts), "toc_changed": sorted(memory.toc.changed),
            "toc_published": memory.toc.published, "stale": sorted(memory.stale), **arrivals}  # fmt: skip


def read_memory(user: str, states: Mapping[str, Record]) -> UserMemory | None:
    """The user's memory as the table holds it (None: nothing yet)."""
    head = states.get(user)
    if not head:
        return None
    if "v" not in head:  # the older whole record: write every part next time
        memory = UserMemory.from_dict(head)
        memory.graph.dirty = set(memory.graph.members)
        memory.graph.used = set(memory.graph.members)
        return memory
    parts = {str(p): int(s) for p, s in head["parts"].items()}
    memory = _from_parts(user, head, parts, states)
    if head["v"] < 3:  # chunks under their old names and size: all written anew, the old deleted after
        memory.graph.dirty = set(memory.graph.members)
        memory.graph.used = set(memory.graph.members)
        memory.retired = both_slots(user, (p for p in parts if p != DREAMS))
        memory.parts = {p: slot for p, slot in parts.items() if p == DREAMS}
    if DREAMS in parts:  # all dreaming made in one part: written anew by chunk, the part deleted after
        memory.retired += both_slots(user, [DREAMS])
        memory.parts.pop(DREAMS, None)
    memory.stale = stale_parts(head, memory.parts)
    return memory


def _from_parts(user: str, head: Record, parts: dict[str, int], states: Mapping[str, Record]) -> UserMemory:
    top = head["graph"]
    whole: Record = {k: top[k] for k in _HEAD_GRAPH}
    concepts = _numbered(user, parts, states, CONCEPT_PREFIX)
    whole["concepts"] = (
        top["concepts"] if head["v"] < 7 else [row for n in sorted(concepts) for row in concepts[n]["concepts"]]
    )
    whole |= {"next": list(top["loose"]["next"]), "causal": list(top["loose"]["causal"]), "episodes": []}
    for name in sorted((p for p in parts if _is_episode_chunk(p)), key=_chunk_number):
        part = states[part_key(user, name, parts[name])]
        for k in ("episodes", "next", "causal"):
            whole[k].extend(part[k])
    made = _numbered(user, parts, states, MADE_PREFIX)
    whole |= states[part_key(user, DREAMS, parts[DREAMS])] if DREAMS in parts else _made_whole(made)
    graph = DreamGraph.from_dict(whole)
    for record in _numbered(user, parts, states, USE_PREFIX).values():
        for node_id, at_ms in record["uses"]:
            if (episode := graph.episodes.get(node_id)) is not None:
                episode.last_access_ms = int(at_ms)
    if DREAMS not in parts:  # the chunks as written, not as ``from_dict`` would place them anew
        graph.made = _placed(made, int(head.get("made_arrivals", 0)))  # none before version 4
    if head["v"] >= 7:  # the concepts' chunks as written (before: all in the head, written anew by chunk)
        ids = {n: [row[0] for row in record["concepts"]] for n, record in concepts.items()}
        graph.concept_chunks = IdChunks.of(ids, int(head["concept_arrivals"]), concept_chunk())
    if head["v"] >= 5:  # citations in their chunks, as written
        graph.cited = _cite_chunks(graph, _numbered(user, parts, states, CITE_PREFIX), int(head["cite_arrivals"]))
    elif DREAMS not in parts:  # version 4: each node's row held its citations; all written anew
        graph.made.dirty = set(graph.made.members)
    toc = TocIndex(user)
    for e in graph.episodes.values():
        toc.add(e.node_id, e.time_ms, e.session_id)
    toc.changed = set(head["toc_changed"])
    toc.unpublished.clear()  # placing the episodes marked every edge unpublished: only those since the last
    toc.published = int(head.get("toc_published", 0))  # publish are (absent in older heads: every edge)
    toc.mark_unpublished(lambda node_id: graph.episodes[node_id].arrival >= toc.published)
    memory = UserMemory.from_dict(head, graph, toc)
    if head["v"] >= 6:  # the ids of echoes in their chunks (before: in the head, read by ``from_dict``)
        memory.pending = _ids(user, parts, states, PENDING_PREFIX, head["pending_arrivals"])
        memory.echoed = _ids(user, parts, states, ECHOED_PREFIX, head["echo_arrivals"])
    memory.parts = parts
    return memory


def _ids_record(graph: DreamGraph, ids: list[str]) -> Record:
    return {"ids": ids}


def _concepts(graph: DreamGraph, ids: list[str]) -> Record:
    """One chunk of concepts: [id, label, committed] in arrival order."""
    return {"concepts": [[c.node_id, c.label, c.committed] for c in (graph.concepts[i] for i in ids)]}


def _ids(user: str, parts: dict[str, int], states: Mapping[str, Record], prefix: str, arrivals: int) -> IdChunks:
    chunks = {n: record["ids"] for n, record in _numbered(user, parts, states, prefix).items()}
    return IdChunks.of(chunks, int(arrivals))


def _numbered(user: str, parts: dict[str, int], states: Mapping[str, Record], prefix: str) -> dict[int, Record]:
    """The records of the user's parts named ``<prefix><number>``, by number."""
    return {int(p.removeprefix(prefix)): states[part_key(user, p, slot)] for p, slot in parts.items() if p[0] == prefix}


def erased(user: str, states: Mapping[str, Record]) -> list[str]:
    """The part keys an erasure of the user must delete, both slots of each (its head is replaced)."""
    return both_slots(user, (states.get(user) or {}).get("parts", {}))


def held(states: Mapping[str, Any]) -> dict[str, Any]:
    """What a dream table holds, independent of how it was written: each user's memory whole
    (``UserMemory.to_dict``) at its head's key, other records (the schedules) as they are, and no
    parts (which slot holds a part depends on the history of writes, not on the memory)."""
    out: dict[str, Any] = {}
    for key, state in states.items():
        if isinstance(state, dict) and "v" in state:
            memory = read_memory(key, states)
            out[key] = memory.to_dict() if memory is not None else None
        elif state is not None and not is_part_key(key):
            out[key] = state
    return out


def _made(graph: DreamGraph, chunk: int) -> Record:
    """One chunk of what dreaming made (made.py), each kind in its items' arrival order."""
    ids = [made_ids(item) for item in graph.made.members.get(chunk, ())]
    return {
        "consolidated": [_made_row(graph.consolidated[i[0]]) for kind, i in ids if kind == NODE_ITEM],
        "rejected": {i[0]: sorted(graph.rejected[i[0]]) for kind, i in ids if kind == REJECTED_ITEM},
        "contracted": [i for kind, i in ids if kind == CONTRACTED_ITEM],
    }


def _made_row(node: Consolidated) -> list[Any]:
    """A node dreaming made, without its citations (they have chunks of their own, ``_cited``)."""
    return [node.node_id, node.kind, node.text, [], sorted(node.anchors), list(node.central)]


def _cited(graph: DreamGraph, chunk: int) -> Record:
    """One chunk of citations: [node id, [cited id, ...]] by node, each in arrival order (copies: the
    table keeps the record, and the lists in hand grow)."""
    return {"cites": [[node_id, list(cites)] for node_id, cites in graph.cited.members.get(chunk, {}).items()]}


def _cite_chunks(graph: DreamGraph, chunks: dict[int, Record], arrivals: int) -> CitedChunks:
    """The citations the chunks hold, given to their nodes, and the chunks that hold them."""
    cited = CitedChunks(arrivals=arrivals)
    for chunk, record in sorted(chunks.items()):
        for node_id, cites in record["cites"]:
            graph.consolidated[node_id].cites.update(cites)
            cited.members.setdefault(chunk, {})[node_id] = list(cites)
    return cited


def _made_whole(chunks: dict[int, Record]) -> Record:
    """What dreaming made, from its chunks in order (``DreamGraph.to_dict``'s parts of it)."""
    whole: Record = {"consolidated": [], "rejected": {}, "contracted": []}
    for chunk in sorted(chunks):
        for k in ("consolidated", "contracted"):
            whole[k].extend(chunks[chunk][k])
        whole["rejected"] |= chunks[chunk]["rejected"]
    return whole


def _placed(chunks: dict[int, Record], arrivals: int) -> IdChunks:
    """The items of what dreaming made in the chunks that hold them."""

    def items(record: Record) -> list[str]:
        items = [made_key(NODE_ITEM, row[0]) for row in record["consolidated"]]
        items += [made_key(REJECTED_ITEM, rule_id) for rule_id in record["rejected"]]
        return items + [made_key(CONTRACTED_ITEM, src, dst) for src, dst in record["contracted"]]

    return IdChunks.of({chunk: items(record) for chunk, record in chunks.items()}, arrivals, made_chunk())


def _chunk(graph: DreamGraph, chunk: int) -> Record:
    """One chunk's episodes with their outgoing NEXT and CAUSAL edges (their uses apart: `_uses`)."""
    ids = list(graph.members.get(chunk, ()))
    return {
        "episodes": [episode_row(graph.episodes[i], use=False) for i in ids],
        "next": [[s, d] for s in ids for d in sorted(graph.next_out.get(s, ()))],
        "causal": [[s, d] for s in ids for d in sorted(graph.causal_out.get(s, ()))],
    }


def _uses(graph: DreamGraph, chunk: int) -> Record:
    """The last access of each used episode of one chunk."""
    used = (graph.episodes[i] for i in graph.members.get(chunk, ()))
    return {"uses": [[e.node_id, e.last_access_ms] for e in used if e.last_access_ms >= 0]}


def _loose(graph: DreamGraph) -> dict[str, list[list[str]]]:
    """The NEXT and CAUSAL edges out of nodes that are not (yet) episodes. From the graph's few
    loose sources, not a difference of every edge source with the episodes: the head is written on
    every batch that touches the user, and that difference grew with the history (py-spy: 17% of
    the worker's CPU at 260,000 turns over 50 users)."""
    loose = graph.loose_sources()

    def out_of(edges: dict[str, set[str]]) -> list[list[str]]:
        return [[s, d] for s in loose for d in sorted(edges.get(s, ()))]

    return {"next": out_of(graph.next_out), "causal": out_of(graph.causal_out)}
