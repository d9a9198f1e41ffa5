"""What dreaming made, by chunk of arrival: so a dream rewrites a chunk, not all it ever made.

Dreaming's own things are the nodes it made (gists, rules, profiles), the candidates it rejected
and the NEXT edges it contracted around dormant episodes. Each is an item, keyed by its kind and
ids (``made_key``); the first time an item comes it is placed in chunk ``arrival // MADE_CHUNK``,
and a change to it (a node's new text, central sentences or anchors, a candidate rejected with
other support, an edge removed) marks its chunk ``dirty``; an upsert that changes nothing (a dream
revisiting a gist it leaves as it was, dreaming's events coming back) marks none. The dream
memory writes each dirty chunk as a part of its table (processors/dreaming/records.py), the way it
writes the episodes' chunks.

The chunk size, measured in process (20,000 turns over 5 users, the ingest bench's batching),
changelog bytes a turn of these chunks in the last fifth of the run: one part for all 6.5 KB, 16
items a chunk 6.0, 4 items 4.6, 1 item 2.6 (but 1.7x the records of 4, and a head that names
every item).

A node's citations (its CITES and ABOUT edges) are kept apart, in ``CitedChunks`` of
``CITE_CHUNK`` by arrival: a dream that rewrites a gist writes its text and the chunks of its new
citations, not all its citations again (they grow with its concept: a median 8 a row written in the
first fifth of that run, 34 in the last, when they were written with the node). Same run, the
changelog KB a turn of what dreaming made, first fifth to last: 0.84 to 4.56 with the citations in
the rows; 0.51 to 0.83 now (the nodes' chunks 0.40 to 0.70, the citations' 0.11 to 0.13).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

MADE_CHUNK: Final = 4  # items a chunk (see the module docstring)
CITE_CHUNK: Final = 64  # citations a chunk (CitedChunks)
NODE_ITEM: Final = "n"  # a node dreaming made (DreamGraph.consolidated)
REJECTED_ITEM: Final = "r"  # a candidate active dreaming rejected (DreamGraph.rejected)
CONTRACTED_ITEM: Final = "c"  # a NEXT edge dreaming contracted (DreamGraph.contracted)
_SEP: Final = "\x1f"


def made_key(kind: str, *ids: str) -> str:
    """The item of ``kind`` (``NODE_ITEM``, ...) with these ids (an edge: its source and target)."""
    return kind + _SEP.join(ids)


def made_ids(item: str) -> tuple[str, list[str]]:
    """The kind and ids of an item (`made_key` undone)."""
    return item[0], item[1:].split(_SEP)


def made_chunk() -> int:
    """Items a chunk of what dreaming made (kept in a ``chunks.IdChunks`` of this size)."""
    return MADE_CHUNK


Cite = tuple[str, str]  # (node id, cited id)


@dataclass(slots=True)
class CitedChunks:
    """The citations of the nodes dreaming made, ``CITE_CHUNK`` a chunk by arrival. A chunk holds
    each node's citations in a list, with no index by citation (there are several a turn): one
    leaves only when its node is removed or a failed dream is put back, and finding its chunk then
    is a scan."""

    members: dict[int, dict[str, list[str]]] = field(default_factory=dict)  # chunk -> node -> cited, in arrival order
    arrivals: int = 0  # citations ever placed
    dirty: set[int] = field(default_factory=set)  # chunks changed since they were last written

    def add(self, cite: Cite) -> None:
        """A new citation: its chunk is to be written."""
        chunk = self.arrivals // CITE_CHUNK
        self.arrivals += 1
        self.place(cite, chunk)
        self.dirty.add(chunk)

    def place(self, cite: Cite, chunk: int) -> None:
        self.members.setdefault(chunk, {}).setdefault(cite[0], []).append(cite[1])

    def drop(self, cites: set[Cite]) -> None:
        """Take these citations out (one scan of the chunks, for all of them)."""
        nodes = {node_id for node_id, _ in cites}
        for chunk, held in self.members.items():
            for node_id in nodes & held.keys():
                kept = [cited for cited in held[node_id] if (node_id, cited) not in cites]
                if len(kept) < len(held[node_id]):
                    held[node_id] = kept
                    self.dirty.add(chunk)
                if not kept:
                    del held[node_id]

    def held(self) -> list[Cite]:
        """Every citation the chunks hold."""
        return [(node_id, cited) for chunk in sorted(self.members) for node_id, cites in self.members[chunk].items()
                for cited in cites]  # fmt: skip

    @classmethod
    def in_order(cls, cites: Iterable[Cite]) -> CitedChunks:
        """Chunks of ``cites`` arriving in this order, every chunk to be written."""
        chunks = cls()
        for cite in cites:
            chunks.add(cite)
        return chunks
