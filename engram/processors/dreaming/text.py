"""Sentences and their terms, and the user's sentence frequencies, kept as episodes arrive.

Every stage that ranks sentences (gists, profiles, the time hierarchy's summaries) weighs terms by
their inverse document frequency over all of the user's sentences. ``SentenceFrequencies`` keeps
those counts up to date as episodes are folded (added, re-written, removed), so a dream reads them
in time proportional to what it ranks, not to the user's whole history.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Final

from engram.processors.retrieval.text import terms

_SENTENCE: Final = re.compile(r"(?<=[.!?])\s+")
MIN_SENTENCE_TERMS: Final = 4


@lru_cache(maxsize=1 << 16)
def split_sentences(whole: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """A text's sentences with their terms (those with at least ``MIN_SENTENCE_TERMS``)."""
    found = ((text.strip(), tuple(terms(text))) for text in _SENTENCE.split(whole.strip()))
    return tuple((text, words) for text, words in found if len(words) >= MIN_SENTENCE_TERMS)


@dataclass(slots=True)
class SentenceFrequencies:
    """``df``: in how many of the user's sentences each term occurs; ``n``: how many sentences."""

    df: Counter[str] = field(default_factory=Counter)
    n: int = 0

    def add(self, text: str, sign: int = 1) -> None:
        """Count (or with ``sign`` -1, uncount) the sentences of one episode's text."""
        for _, words in split_sentences(text):
            self.df.update(dict.fromkeys(words, sign))
            self.n += sign
        if sign < 0:
            self.df = +self.df  # drop the terms no sentence holds any more
