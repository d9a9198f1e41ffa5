"""A user's period tallies: the recently used ones as objects, the others frozen.

A dream reads few tallies: a changed period's own (to rank its keywords), and a changed segment's
(to shift the periods above it by what changed). A closed period, an earlier session or a past
day, is read again only when an episode under it changes. Every segment keeps a tally, so as
objects they grew with the history: each term of each segment held as a count, a member of its
count's set and a word form (traced, the dream memory's largest structure, 1.7 KB a turn).
``Tallies`` keeps as ``Tally`` objects the ones read since the last ``settle`` (at most ``hot``, the
most recently used), and the others as zlib-compressed JSON of their counts and words. Reading a
frozen tally thaws it exactly: the same counts and words, so the same keywords and surface words.
The dream calls ``settle`` once it has published, so no tally is frozen while a caller holds it,
and what stays in hand between two dreams is what the last one read: its segments' paths, which the
next dream of the user reads again. Measured in process, 30,000 bench turns over 5 users (6,000 a
user, as deep as the 300,000-turn bench's users), the Trace and dream steps alone: RSS 479 -> 434 MB
with the 16 most recently used kept; keeping only those read since the last settle: ``settle``.
"""

from __future__ import annotations

import json
import zlib
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

from engram.processors.toc.tally import Tally

HOT: Final = 16  # a segment's path is 5 periods: a dream's changes fit with room to spare


@dataclass(slots=True)
class Tallies:
    """Period key -> its ``Tally``, the last ``hot`` used as objects, the rest frozen."""

    hot: int = HOT
    _live: OrderedDict[str, Tally] = field(default_factory=OrderedDict)
    _frozen: dict[str, bytes] = field(default_factory=dict)
    _read: set[str] = field(default_factory=set)  # keys read or set since the last settle

    def __contains__(self, key: object) -> bool:
        return key in self._live or key in self._frozen

    def __len__(self) -> int:
        return len(self._live) + len(self._frozen)

    def __getitem__(self, key: str) -> Tally:
        found = self.get(key)
        if found is None:
            raise KeyError(key)
        return found

    def __setitem__(self, key: str, tally: Tally) -> None:
        self._frozen.pop(key, None)
        self._live[key] = tally
        self._live.move_to_end(key)
        self._read.add(key)

    def get(self, key: str) -> Tally | None:
        """The period's tally (thawed, if it was frozen), now the most recently used; or None."""
        tally = self._live.get(key)
        if tally is not None:
            self._live.move_to_end(key)
            self._read.add(key)
            return tally
        frozen = self._frozen.pop(key, None)
        if frozen is None:
            return None
        tally = self._live[key] = thawed(frozen)
        self._read.add(key)
        return tally

    def pop(self, key: str) -> Tally | None:
        tally = self.get(key)
        self._live.pop(key, None)
        return tally

    def discard(self, key: str) -> None:
        self._live.pop(key, None)
        self._frozen.pop(key, None)
        self._read.discard(key)

    def keys(self) -> set[str]:
        return self._live.keys() | self._frozen.keys()

    def live(self) -> int:
        """How many are held as objects."""
        return len(self._live)

    def settle(self, depth: Callable[[str], int] = lambda key: 0) -> None:
        """Freeze every tally not read since the last settle; then, past ``hot``, the deepest
        (``depth``: a period's level, 0 for a year) and, at one depth, the least recently used.

        A dream reads its changed segments' paths, coarsest level first (`TocIndex.take_changed`),
        so the most recently used alone would freeze the coarse periods before the segments: the
        largest tallies, and those every next dream reads again. Measured in process, 30,000 bench
        turns over 50 users (600 a user), the Trace and dream steps alone, the same events: the 16
        most recently used held 78.5 MB of tallies and thawed none; the 5 most recently used held
        40.9 MB and thawed 650; those read since the last settle (6 a user) hold 49.8 MB and thaw
        none. Over 5 users (6,000 a user): 13.6 MB with the 16 most recently used, 10.6 MB now.
        """
        for key in [key for key in self._live if key not in self._read]:
            self._frozen[key] = frozen(self._live.pop(key))
        self._read.clear()
        if len(self._live) <= self.hot:
            return
        recency = {key: n for n, key in enumerate(self._live)}
        for key in sorted(self._live, key=lambda k: (-depth(k), recency[k]))[: len(self._live) - self.hot]:
            self._frozen[key] = frozen(self._live.pop(key))


def frozen(tally: Tally) -> bytes:
    words = [[stem, word, n] for (stem, word), n in tally.pairs()]
    return zlib.compress(json.dumps([tally.counts, words], separators=(",", ":")).encode(), 1)


def thawed(data: bytes) -> Tally:
    counts, words = json.loads(zlib.decompress(data))
    return Tally.of(counts, {(stem, word): n for stem, word, n in words})
