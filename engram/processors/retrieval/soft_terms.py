"""Soft term matching: what a named person said, each query word matched by meaning to their words.

A question about someone often names a kind ("What instruments does Melanie play?", "Where has
Maria made friends?") where the turns that answer it name instances ("playing my violin", "I
joined a gym last week"). BM25 needs the same word, and a turn's vector averages all its words, so
such a turn ranks low on both. Here, among the candidates whose author the query names (as the
author rerank reads it: ``rerank.named_author``), each content word of the query (not a stopword
or a very common word, not a capitalized name) is matched to every word of the turn by the cosine
of their static word vectors; the best match counts when it reaches ``threshold``, weighted by the
query word's rarity. Those candidates gain ``weight`` times the top score times their share of the
best match, so the ranking keeps its scale, and a query that names no author (a user asking about
their own past: LongMemEval) is left as it was.

Word vectors come from the static MiniLM table the default embedder ships (``embedding/static.py``):
a word's vector is the sum of its WordPiece tokens' rows, its rarity that sum's norm (the table's
rows carry SIF weights from English word frequencies, so "the" weighs 0.8 and "violin" 7.5). They
are computed once per word and kept, at most ``CACHE_WORDS`` of them, per process.

Chosen on LoCoMo conversations 26, 30, 41 (weight 0.3, threshold 0.4; recall@10 0.797 -> 0.801,
multi-hop 0.498 -> 0.550, budget recall 0.857 -> 0.871), checked on the held-out 42, 43 (recall@10
0.745 -> 0.752, multi-hop 0.470 -> 0.486, budget recall 0.833 -> 0.827); LongMemEval unchanged.
``engram bench locomo`` prints the ranking without it among its fusion comparisons.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Sequence
from typing import Final, Protocol

import numpy as np
import numpy.typing as npt

from engram.processors.embedding.static import StaticTable, load_table
from engram.processors.retrieval.rerank import named_author
from engram.processors.retrieval.text import STOPWORDS
from engram.processors.retrieval.types import Candidate, NodeRecord

_COMMON_TEXT: Final = """
    also any both each even ever every few get gets getting got good great just kind like lot lots made make makes
    many much new now one other really same some still such than thing things two very way ways well yet feel feels
    felt done doing
"""
_COMMON: Final = STOPWORDS | frozenset(_COMMON_TEXT.split())
"""Words too common to say what a question is about, beyond the BM25 analyzer's stopwords."""
Rows = npt.NDArray[np.intp]
CACHE_WORDS: Final = 32_768
CACHE_TEXTS: Final = 16_384
_WORD: Final = re.compile(r"[A-Za-z]{3,}")


class _Nodes(Protocol):
    def node(self, node_id: str) -> NodeRecord | None: ...


class WordVectors:
    """Unit vectors and rarities of words from the static table, each word computed once, and the
    word rows of texts seen before. Beyond ``capacity`` words (or ``texts`` texts) everything is
    dropped and computed again as needed: a word's vector never depends on what is kept. Callers
    hold ``lock`` while they use the rows it returned."""

    def __init__(self, capacity: int = CACHE_WORDS, texts: int = CACHE_TEXTS) -> None:
        self.lock = threading.Lock()
        self._capacity, self._text_capacity = capacity, texts
        self._table: StaticTable | None = None
        self._rows: dict[str, int] = {}
        self._texts: dict[str, npt.NDArray[np.intp]] = {}
        self._units = np.zeros((0, 0), dtype=np.float32)  # grown by doubling; the first len(_rows) are in use
        self._rarity = np.zeros(0, dtype=np.float32)
        self._generation = 0  # how many times everything was dropped
        self._holding = False  # nothing is dropped while set

    def rows(self, query: Sequence[str], texts: Sequence[str]) -> tuple[Rows, list[Rows]]:
        """The rows of the query's words and of each text's content words, all valid together: were
        the cache dropped on the way, they are taken again, and this once it may pass its capacity."""
        generation = self._generation
        found = self.words(query), [self.text(text) for text in texts]
        if generation == self._generation:
            return found
        self._holding = True
        try:
            return self.words(query), [self.text(text) for text in texts]
        finally:
            self._holding = False

    def words(self, words: Sequence[str]) -> npt.NDArray[np.intp]:
        """The rows of ``words`` (computing the new ones)."""
        missing = [w for w in dict.fromkeys(words) if w not in self._rows]
        if missing:
            if len(self._rows) + len(missing) > self._capacity and not self._holding:
                self._rows, self._texts = {}, {}
                self._generation += 1
                missing = list(dict.fromkeys(words))
            self._add(missing)
        return np.fromiter((self._rows[w] for w in words), dtype=np.intp, count=len(words))

    def text(self, text: str) -> npt.NDArray[np.intp]:
        """The rows of a text's distinct content words (kept per text)."""
        rows = self._texts.get(text)
        if rows is None:
            rows = self.words(node_words(text))
            if len(self._texts) >= self._text_capacity:
                self._texts = {}
            self._texts[text] = rows
        return rows

    def units(self, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        return self._units[rows]

    def rarity(self, rows: npt.NDArray[np.intp]) -> npt.NDArray[np.float32]:
        return self._rarity[rows]

    def _add(self, words: list[str]) -> None:
        if self._table is None:
            self._table = load_table()
        table = self._table
        first, end = len(self._rows), len(self._rows) + len(words)
        if end > self._units.shape[0]:
            size = max(end, 2 * self._units.shape[0], 1024)
            units = np.zeros((size, table.vectors.shape[1]), dtype=np.float32)
            rarity = np.zeros(size, dtype=np.float32)
            if first:
                units[:first], rarity[:first] = self._units[:first], self._rarity[:first]
            self._units, self._rarity = units, rarity
        for row, encoding in enumerate(table.tokenizer.encode_batch(words, add_special_tokens=False), start=first):
            summed = table.vectors[encoding.ids].sum(axis=0) if encoding.ids else 0.0
            norm = float(np.linalg.norm(summed))
            self._rarity[row] = norm
            self._units[row] = summed / norm if norm > 0.0 else 0.0
        for row, word in enumerate(words, start=first):
            self._rows[word] = row


_VECTORS: Final = WordVectors()


def query_words(query: str) -> list[str]:
    """The query's content words, lowercased: no stopwords, no names (capitalized after the first word)."""
    out: list[str] = []
    for i, match in enumerate(_WORD.finditer(query)):
        word = match.group()
        if i > 0 and word[0].isupper() and not word.isupper():
            continue
        low = word.lower()
        if low not in _COMMON and low not in out:
            out.append(low)
    return out


def node_words(text: str) -> list[str]:
    """A text's distinct content words, lowercased."""
    return list(dict.fromkeys(w for w in (m.group().lower() for m in _WORD.finditer(text)) if w not in _COMMON))


def term_match(
    memory: _Nodes, ranking: Sequence[Candidate], query: str, *, weight: float, threshold: float,
    author_property: str, vectors: WordVectors = _VECTORS,
) -> list[Candidate]:  # fmt: skip
    """``ranking`` rescored by soft term matching (see the module docstring), best first; ties keep
    their order."""
    asked = query_words(query)
    if not ranking or not asked or weight <= 0.0:
        return list(ranking)
    records = [memory.node(c.node_id) for c in ranking]
    named = [r is not None and named_author(r.properties.get(author_property, ""), query) for r in records]
    if not any(named):
        return list(ranking)
    texts = [r.text if r is not None and by else "" for r, by in zip(records, named, strict=True)]
    with vectors.lock:
        asked_rows, cells = vectors.rows([*asked, ""], texts)  # "": a zero row, the words of a text with none
        asked_rows, nothing = asked_rows[:-1], asked_rows[-1:]
        cells = [rows if len(rows) else nothing for rows in cells]
        flat = np.concatenate(cells)
        sims = vectors.units(asked_rows) @ vectors.units(flat).T  # (query words, the candidates' words)
        weights = vectors.rarity(asked_rows).astype(np.float64)
    sims[sims < threshold] = 0.0
    starts = np.cumsum([0] + [len(c) for c in cells[:-1]])
    best_per_word = np.maximum.reduceat(sims, starts, axis=1)  # (query words, candidates)
    matched = weights @ best_per_word
    best = float(matched.max())
    if best <= 0.0:
        return list(ranking)
    top = max(c.score for c in ranking)
    gain = weight * top / best
    rescored = [Candidate(c.node_id, c.score + gain * m, c.source) for c, m in zip(ranking, matched, strict=True)]
    order = sorted(range(len(rescored)), key=lambda i: -rescored[i].score)
    return [rescored[i] for i in order]
