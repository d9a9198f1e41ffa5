"""Lookups over a user's episodes, kept as they are folded, so a dream reads what it needs.

A dream asks the same questions of the user's whole history every time: which episodes REF each
concept (clustering), which episode holds a turn (rules), which capitalised names recur (entity
profiles), how often each term occurs (IDF). Scanning every episode to answer them made a dream's
cost grow with the history (at 5,000+ turns a user, most of the worker's time). ``EpisodeIndex``
keeps the answers (and each session's episodes) up to date as the graph folds an episode in,
re-writes or removes it, or adds or removes one of its REF edges, so each question costs what it
returns.

Derived state: not in the JSON form, rebuilt when a graph is read back (DreamGraph.from_dict).
``latest_ms`` is the latest episode time ever placed (an upper bound once episodes are removed): a
dream at an earlier time must leave the later episodes out, and scans instead (which never happens
in a worker, where a dream fires before the turn that makes it due is folded).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Final

from engram.processors.dreaming.text import SentenceFrequencies

if TYPE_CHECKING:
    from engram.processors.dreaming.rows import Episode

_NAME: Final = re.compile(r"\b[A-Z][a-z]{2,}\b")
_MID_NAME: Final = re.compile(r"(?<![.!?]\s)(?<=\s)[A-Z][a-z]{2,}\b")  # not the first word of a sentence
_WORD: Final = re.compile(r"[a-z]+")

Names = tuple[frozenset[str], frozenset[str], frozenset[str]]


@lru_cache(maxsize=1 << 12)
def names_of(text: str) -> Names:
    """A text's lower-case words, the names it capitalises inside a sentence, and every capitalised
    name (cached: a text is placed and removed with the same answer)."""
    return frozenset(_WORD.findall(text)), frozenset(_MID_NAME.findall(text)), frozenset(_NAME.findall(text))


@dataclass(slots=True)
class NameCounts:
    """Over a set of episodes: in how many each lower-case word occurs (``words``), in how many each
    name is capitalised inside a sentence (``inside``), and the episodes using each name (``uses``)."""

    words: Counter[str] = field(default_factory=Counter)
    inside: Counter[str] = field(default_factory=Counter)
    uses: dict[str, dict[str, None]] = field(default_factory=dict)

    @staticmethod
    def of(episodes: Iterable[Episode]) -> NameCounts:
        counts = NameCounts()
        for episode in episodes:
            counts.add(episode.node_id, episode.text)
        return counts

    def add(self, node_id: str, text: str) -> None:
        words, mid, names = names_of(text)
        self.words.update(words)
        self.inside.update(mid)
        for name in names:
            self.uses.setdefault(name, {})[node_id] = None

    def remove(self, node_id: str, text: str) -> None:
        words, mid, names = names_of(text)
        _uncount(self.words, words)
        _uncount(self.inside, mid)
        for name in names:
            ids = self.uses.get(name, {})
            ids.pop(node_id, None)
            if not ids:
                self.uses.pop(name, None)


def _uncount(counter: Counter[str], keys: Iterable[str]) -> None:
    for key in keys:
        left = counter[key] - 1
        if left > 0:
            counter[key] = left
        else:
            del counter[key]


@dataclass(slots=True)
class EpisodeIndex:
    """What a dream reads of a user's episodes, kept up to date (see the module docstring)."""

    by_concept: dict[str, dict[str, None]] = field(default_factory=dict)  # concept -> episodes that REF it
    by_turn: dict[str, str] = field(default_factory=dict)  # turn id -> episode node id
    by_session: dict[str, dict[str, None]] = field(default_factory=dict)  # session id -> its episodes
    names: NameCounts = field(default_factory=NameCounts)
    frequencies: SentenceFrequencies = field(default_factory=SentenceFrequencies)
    latest_ms: int = -1

    def place(self, episode: Episode, old: Episode | None = None) -> None:
        """An episode folded in, or re-written (``old``: what the graph held before)."""
        if old is not None and old.text != episode.text:
            self.names.remove(old.node_id, old.text)
            self.frequencies.add(old.text, -1)
        if old is None or old.text != episode.text:
            self.names.add(episode.node_id, episode.text)
            self.frequencies.add(episode.text)
        if old is not None and old.turn_id != episode.turn_id and self.by_turn.get(old.turn_id) == old.node_id:
            del self.by_turn[old.turn_id]
        self.by_turn[episode.turn_id] = episode.node_id
        if old is not None and old.session_id != episode.session_id:
            _leave(self.by_session, old.session_id, old.node_id)
        self.by_session.setdefault(episode.session_id, {})[episode.node_id] = None
        for concept in episode.concepts:
            self.refer(episode.node_id, concept)
        self.latest_ms = max(self.latest_ms, episode.time_ms)

    def remove(self, episode: Episode) -> None:
        self.names.remove(episode.node_id, episode.text)
        self.frequencies.add(episode.text, -1)
        if self.by_turn.get(episode.turn_id) == episode.node_id:
            del self.by_turn[episode.turn_id]
        _leave(self.by_session, episode.session_id, episode.node_id)
        for concept in episode.concepts:
            self.unrefer(episode.node_id, concept)

    def refer(self, node_id: str, concept: str) -> None:
        self.by_concept.setdefault(concept, {})[node_id] = None

    def unrefer(self, node_id: str, concept: str) -> None:
        _leave(self.by_concept, concept, node_id)

    def covers(self, at_ms: int) -> bool:
        """Whether every episode placed is at or before ``at_ms`` (the index answers for a dream then)."""
        return self.latest_ms <= at_ms


def _leave(groups: dict[str, dict[str, None]], group: str, node_id: str) -> None:
    """``node_id`` out of ``group``, which goes once empty."""
    members = groups.get(group, {})
    members.pop(node_id, None)
    if not members:
        groups.pop(group, None)


def concept_members(episodes: Iterable[Episode]) -> dict[str, dict[str, None]]:
    """Concept -> the given episodes that REF it (what ``by_concept`` holds, for a subset)."""
    out: dict[str, dict[str, None]] = {}
    for episode in episodes:
        for concept in episode.concepts:
            out.setdefault(concept, {})[episode.node_id] = None
    return out
