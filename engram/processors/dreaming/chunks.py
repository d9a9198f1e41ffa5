"""Ids the dream memory keeps in chunks by arrival, each chunk a part of its table (records.py): what
dreaming made (made.py), the echoes, the concepts.

Echoes: a user's memory holds the ids of the events dreaming emitted that have not come back through the
topic yet (``UserMemory.pending``) and the last ids that did (``UserMemory.echoed``). Written whole
in the head record, the pending ids made every write of the head cost what was in flight: with
dreaming's echoes 2,000 turns behind (the worker's backlog under load), the head grew from 4.5 KB
to 13-15 KB a turn of changelog (in process, 20,000 turns over 5 users, batches of 50). In chunks
of ``ECHO_CHUNK`` by arrival, each a part of the table (processors/dreaming/records.py), a batch
writes the chunks whose ids came or went, and a chunk all of whose ids came back is deleted.

Concepts: the user's Atlas concepts (label, committed), ``CONCEPT_CHUNK`` a chunk by arrival, were
written whole in the head too, on every batch that touched the user; their number grows with what
the user talks about. A chunk is written when one of its concepts comes or changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Final

ECHO_CHUNK: Final = 64  # ids of echoes a chunk
CONCEPT_CHUNK: Final = 16  # concepts a chunk (a row is about 165 bytes of JSON)


def echo_chunk() -> int:
    return ECHO_CHUNK


def concept_chunk() -> int:
    return CONCEPT_CHUNK


@dataclass(slots=True)
class IdChunks:
    """A set of ids in arrival order, each in chunk ``arrival // size``; ``dirty``: the chunks
    changed since they were last written (a chunk left empty is to be deleted)."""

    size: int = field(default_factory=echo_chunk)
    chunk_of: dict[str, int] = field(default_factory=dict)
    members: dict[int, dict[str, None]] = field(default_factory=dict)
    arrivals: int = 0  # ids ever placed
    dirty: set[int] = field(default_factory=set)

    def __contains__(self, event_id: object) -> bool:
        return event_id in self.chunk_of

    def __len__(self) -> int:
        return len(self.chunk_of)

    def __iter__(self) -> Iterator[str]:
        """The ids in arrival order."""
        return (event_id for chunk in sorted(self.members) for event_id in self.members[chunk])

    def add(self, event_id: str) -> None:
        if event_id in self.chunk_of:
            return
        chunk = self.arrivals // self.size
        self.arrivals += 1
        self._place(event_id, chunk)
        self.dirty.add(chunk)

    def touch(self, event_id: str) -> None:
        """The id came, or what it names changed: its chunk is to be written."""
        chunk = self.chunk_of.get(event_id)
        if chunk is None:
            self.add(event_id)
        else:
            self.dirty.add(chunk)

    def discard(self, event_id: str) -> None:
        chunk = self.chunk_of.pop(event_id, None)
        if chunk is not None:
            del self.members[chunk][event_id]
            self.dirty.add(chunk)

    def keep_last(self, count: int) -> None:
        """Let the oldest chunks go while the newer ones hold at least ``count`` ids."""
        while len(self.members) > 1:
            oldest = min(self.members)
            if len(self) - len(self.members[oldest]) < count:
                return
            for event_id in self.members.pop(oldest):
                del self.chunk_of[event_id]
            self.dirty.add(oldest)

    def written(self) -> tuple[dict[int, list[str]], list[int]]:
        """The chunks to write (number -> ids) and those to delete, since the last call."""
        kept = {chunk: list(self.members[chunk]) for chunk in sorted(self.dirty) if self.members.get(chunk)}
        gone = sorted(self.dirty - kept.keys())
        for chunk in gone:
            self.members.pop(chunk, None)
        self.dirty.clear()
        return kept, gone

    def _place(self, event_id: str, chunk: int) -> None:
        self.chunk_of[event_id] = chunk
        self.members.setdefault(chunk, {})[event_id] = None

    @classmethod
    def in_order(cls, ids: Iterable[str], size: int | None = None) -> IdChunks:
        """Chunks of ``ids`` arriving in this order, every chunk to be written."""
        chunks = cls() if size is None else cls(size)
        for event_id in ids:
            chunks.add(event_id)
        return chunks

    @classmethod
    def of(cls, chunks: Mapping[int, Iterable[str]], arrivals: int, size: int | None = None) -> IdChunks:
        """The chunks as written (number -> ids)."""
        out = cls(arrivals=arrivals) if size is None else cls(size, arrivals=arrivals)
        for chunk, ids in sorted(chunks.items()):
            for event_id in ids:
                out._place(str(event_id), chunk)
        return out
