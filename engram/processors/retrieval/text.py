"""Text analysis shared by the BM25 index, the index-free scan and query preprocessing.

One analyzer for documents and queries: lowercase, split on anything that is not a letter or a
digit, drop English stopwords, then a light suffix-stripping stemmer (plurals, -ing, -ed, -ly).
It is deliberately general (no per-dataset word lists) and deterministic; stems are memoized
because the vocabulary of a memory is small compared with its token stream.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from engram.processors.retrieval.types import NodeRecord

_WORD: Final = re.compile(r"[a-z0-9]+")
_VOWEL: Final = re.compile(r"[aeiouy]")

_STOPWORD_TEXT: Final = """
    a about above after again against all am an and any are as at be because been before being below
    between both but by can could did do does doing don down during each few for from further had has
    have having he her here hers herself him himself his how i if in into is it its itself just ll me
    might more most must my myself no nor not now of off on once only or other our ours ourselves out
    over own re s same shall she should so some such t than that the their theirs them themselves then
    there these they this those through to too under until up ve very was we were what when where which
    while who whom why will with would you your yours yourself yourselves d m o y
"""
STOPWORDS: Final[frozenset[str]] = frozenset(_STOPWORD_TEXT.split())


def _strip_double(stem: str) -> str:
    if len(stem) > 3 and stem[-1] == stem[-2] and stem[-1] not in "lsz":
        return stem[:-1]
    return stem


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """A light English stemmer: conflates the common inflections, never shortens below 3 letters."""
    if len(word) <= 3 or not word.isalpha():
        return word
    if word.endswith("ies") and len(word) > 4:
        word = word[:-3] + "y"
    elif word.endswith("sses"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    for suffix in ("ing", "ed"):
        if word.endswith(suffix):
            base = word[: -len(suffix)]
            if len(base) >= 3 and _VOWEL.search(base):
                return _strip_double(base)
            return word
    if word.endswith("ly") and len(word) > 5:
        return word[:-2]
    if word.endswith("e") and len(word) > 3:
        return word[:-1]  # "hike" meets "hiking" and "hiked" at "hik"
    return word


def terms(text: str) -> list[str]:
    """The index terms of ``text`` in order of appearance (repeats kept: BM25 counts them)."""
    return [stem(w) for w in _WORD.findall(text.lower()) if w not in STOPWORDS]


def indexed_terms(record: NodeRecord, properties: Sequence[str]) -> list[str]:
    """What BM25 indexes for a node: the values of ``properties`` (who spoke a turn) and its text."""
    extra = " ".join(record.properties.get(p, "") for p in properties)
    return terms(f"{extra} {record.text}" if extra else record.text)


def query_terms(text: str) -> list[str]:
    """Distinct index terms of a query, first occurrence order (a repeated query word is not a boost)."""
    return list(dict.fromkeys(terms(text)))
