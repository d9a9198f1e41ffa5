"""A period's term counts, kept by difference, and its keywords read without ranking every term.

A coarse period's keywords rank the terms of every episode under it (TF-IDF against the user's
whole memory). Summing its children's counts on every publish, then ranking its whole vocabulary,
made a year's summary cost what the year holds, and a long history's dreams grow with it. A
``Tally`` instead:

- is shifted by the difference a changed segment makes (``TocIndex.retally``), so a publish costs
  what changed, not what the period holds;
- groups its terms by count, so ``top`` reads terms in decreasing count and stops once no term
  left can enter the top k (a term's weight never exceeds the IDF's ceiling): the same k terms, in
  the same order, as ranking them all;
- keeps each stem's words with their counts, so a keyword shows as its most frequent word: as one
  (word, count) pair while the stem has a single word here, as most have (a dict per stem was
  two thirds of a user's tallies: every period holds one per stem, at every level).
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

Pair = tuple[str, str]  # (stem, word)
Forms = tuple[str, int] | dict[str, int]  # a stem's only (word, count), or its words' counts
_T = TypeVar("_T")


@dataclass(slots=True)
class Tally:
    """``counts``: term -> occurrences; ``by_count``: occurrences -> terms; ``forms``: stem -> its
    words' counts (``Forms``)."""

    counts: dict[str, int] = field(default_factory=dict)
    by_count: dict[int, set[str]] = field(default_factory=dict)
    forms: dict[str, Forms] = field(default_factory=dict)

    @staticmethod
    def of(counts: Mapping[str, int], words: Mapping[Pair, int]) -> Tally:
        tally = Tally()
        tally.shift(counts, words)
        return tally

    @staticmethod
    def summed(parts: Iterable[Tally]) -> Tally:
        tally = Tally()
        for part in parts:
            tally.shift(part.counts, dict(part.pairs()))
        return tally

    def pairs(self) -> Iterable[tuple[Pair, int]]:
        for stem, found in self.forms.items():
            if isinstance(found, tuple):
                yield (stem, found[0]), found[1]
            else:
                yield from (((stem, word), n) for word, n in found.items())

    def shift(self, counts: Mapping[str, int], words: Mapping[Pair, int]) -> None:
        """Add ``counts`` and ``words`` (negative numbers take away); what reaches 0 is dropped."""
        for term, n in counts.items():
            self._count(term, n)
        for (stem, word), n in words.items():
            self._form(stem, word, n)

    def _form(self, stem: str, word: str, n: int) -> None:
        found = self.forms.get(stem)
        if found is None or (isinstance(found, tuple) and found[0] == word):
            left = n + (0 if found is None else found[1])
            if left:
                self.forms[stem] = (word, left)
            elif found is not None:
                del self.forms[stem]
            return
        words = dict((found,)) if isinstance(found, tuple) else found
        left = words.get(word, 0) + n
        if left:
            words[word] = left
        else:
            words.pop(word, None)
        if len(words) > 1:
            self.forms[stem] = words
        elif words:
            self.forms[stem] = next(iter(words.items()))
        else:
            del self.forms[stem]

    def _count(self, term: str, n: int) -> None:
        old = self.counts.get(term, 0)
        new = old + n
        if old:
            bucket = self.by_count[old]
            bucket.discard(term)
            if not bucket:
                del self.by_count[old]
        if new:
            self.counts[term] = new
            self.by_count.setdefault(new, set()).add(term)
        else:
            self.counts.pop(term, None)

    def top(self, k: int, weight: Callable[[str], float], ceiling: float) -> list[str]:
        """``sorted(counts, key=lambda t: (-counts[t] * weight(t), t))[:k]``, given that no
        ``weight(t)`` exceeds ``ceiling``: a term of count c scores at most c × ceiling, so once that
        is below the k-th best score, no term of count c or less can enter."""
        chosen: list[tuple[float, str]] = []
        for count in sorted(self.by_count, reverse=True):
            if len(chosen) == k and count * ceiling < -chosen[-1][0]:
                break
            chosen = heapq.nsmallest(k, chosen + [(-count * weight(t), t) for t in self.by_count[count]])
        return [term for _, term in chosen]

    def surface(self, stem: str) -> str:
        """The stem's most frequent word here (ties by the word), or the stem when none is known."""
        found = self.forms.get(stem)
        if found is None:
            return stem
        if isinstance(found, tuple):
            return found[0]
        return min(found.items(), key=lambda item: (-item[1], item[0]))[0]


def difference(new: Tally, old: Tally | None) -> tuple[dict[str, int], dict[Pair, int]]:
    """What turns ``old`` into ``new``: the (counts, words) to shift by (only what differs)."""
    if old is None:
        return dict(new.counts), dict(new.pairs())
    counts = _minus(new.counts, old.counts)
    words = _minus(dict(new.pairs()), dict(old.pairs()))
    return counts, words


def _minus(new: Mapping[_T, int], old: Mapping[_T, int]) -> dict[_T, int]:
    out = {key: n - old.get(key, 0) for key, n in new.items() if n != old.get(key, 0)}
    out.update((key, -n) for key, n in old.items() if key not in new)
    return out
