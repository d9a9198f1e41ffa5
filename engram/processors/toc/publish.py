"""TOC summaries and the MemoryEvents that publish the periods a dream saw change.

A period's summary is deterministic and extractive (seed 002: "title, bullets, keywords"): its
episode and session counts, its most distinctive terms (TF-IDF against the user's whole memory)
and its most central sentences, at most ``SUMMARY_CHARS`` characters.

Summaries are built up the hierarchy: each period has a ``Digest`` (its episode count and its
``CANDIDATES`` most central sentences by its own IDF), a segment's read from its episodes, a coarser
period's from its children's, kept until an episode is placed under it; and a ``Tally`` of its term
and word counts (processors/toc/tally.py), a segment's counted from its episodes, a coarser
period's shifted by the difference each new segment digest makes. A segment's sentences are ranked
from all of its episodes; a coarser period's from its children's candidates, each weighing for the
episodes its child holds. So publishing a changed year costs what its months hand up and what
changed, not what the year holds, and a digest depends only on the episodes under it (a memory read
back from its record digests the same). Each published period is a
node of kind ``toc`` (properties: level, period, bounds, counts) with CONTAINS edges parent → child
and segment → episode, so the graph store can be browsed by time and the view can narrow by it.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from engram.processors.dreaming.cluster import Idf, Sentence, central, sentences_of
from engram.processors.retrieval.text import stem
from engram.processors.toc.index import TocIndex
from engram.processors.toc.tally import Tally
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, Layer, MemoryEvent

TOC_KIND: Final = "toc"
CONTAINS: Final = "CONTAINS"
SUMMARY_CHARS: Final = 400
KEYWORDS: Final = 6
SENTENCES: Final = 2
CANDIDATES: Final = 4  # sentences a period hands up to its parent
_WORD: Final = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Said:
    """What the TOC reads of an episode."""

    text: str
    time_ms: int


def toc_node_id(user_id: str, key: str) -> str:
    return stable_id("toc", user_id, key)


@dataclass(frozen=True, slots=True)
class Digest:
    """What a period hands up: its episodes (those ``said`` holds) and its ``CANDIDATES`` most
    central sentences with the mass each stands for (its term counts: ``TocIndex.tallies``)."""

    episodes: int
    candidates: tuple[Sentence, ...]
    mass: tuple[float, ...]


def digest(index: TocIndex, key: str, said: Mapping[str, Said]) -> Digest:
    """The period's digest, from its episodes (a segment) or its children's digests; after it, the
    period's tally counts every episode under it."""
    found = index.digests.get(key)
    if found is not None:
        return found
    period = index.periods[key]
    if period.level == "segment":
        ids = sorted(i for i in period.episodes if i in said)
        group = sentences_of((i, said[i].text, said[i].time_ms) for i in ids)
        counts = Counter(t for s in group for t in s.terms)
        index.retally(key, Tally.of(counts, Counter(_words(s.text for s in group))))
        made = Digest(len(ids), tuple(central(group, CANDIDATES)), ())
    else:
        children = [digest(index, child, said) for child in sorted(period.children)]
        if key not in index.tallies:  # read back, or never published: summed once, then shifted
            index.tallies[key] = Tally.summed(index.tallies[child] for child in sorted(period.children))
        group, mass = _handed_up(children)
        chosen = central(group, CANDIDATES, None, mass)
        weight = {id(s): m for s, m in zip(group, mass, strict=True)}
        made = Digest(sum(c.episodes for c in children), tuple(chosen), tuple(weight[id(s)] for s in chosen))
    index.digests[key] = made
    return made


def _handed_up(children: list[Digest]) -> tuple[list[Sentence], list[float]]:
    """The children's candidates, each with the mass of the episodes it stands for."""
    group: list[Sentence] = []
    mass: list[float] = []
    for child in children:
        group.extend(child.candidates)
        share = child.episodes / max(1, len(child.candidates))
        mass.extend(child.mass or (share,) * len(child.candidates))
    return group, mass


def summary(index: TocIndex, key: str, said: Mapping[str, Said], idf: Idf) -> tuple[str, list[str]]:
    """(summary text, keywords) of a period."""
    period = index.periods[key]
    found = digest(index, key, said)
    tally = index.tallies[key]
    ranked = tally.top(KEYWORDS, idf.weight, idf.ceiling())
    head = f"{period.level} {key}: {found.episodes} episodes, {len(period.sessions)} sessions"
    shown = [tally.surface(root) for root in ranked]  # "hiking", not "hik"
    text = f"{head}. Keywords: {', '.join(shown)}." if ranked else f"{head}."
    for s in _central(index, key, said, idf):
        if len(text) + len(s.text) + 1 > SUMMARY_CHARS:
            break
        text += f" {s.text}"
    return text[:SUMMARY_CHARS], ranked


def _central(index: TocIndex, key: str, said: Mapping[str, Said], idf: Idf) -> list[Sentence]:
    """A segment's most central sentences among all of its own; a coarser period's among what its
    children hand up."""
    period = index.periods[key]
    if period.level == "segment":
        ids = sorted(i for i in period.episodes if i in said)
        return central(sentences_of((i, said[i].text, said[i].time_ms) for i in ids), SENTENCES, idf)
    group, mass = _handed_up([digest(index, child, said) for child in sorted(period.children)])
    return central(group, SENTENCES, idf, mass)


def _words(texts: Iterable[str]) -> Iterable[tuple[str, str]]:
    """(stem, word) of every word of the texts."""
    return ((stem(w), w) for text in texts for w in _WORD.findall(text.lower()))


def toc_events(
    index: TocIndex, changed: list[str], at_ms: int, *, said: Mapping[str, Said], idf: Idf, layer: Layer,
    count: Callable[[str], int],
) -> list[MemoryEvent]:  # fmt: skip
    """NodeUpserted per changed period and its CONTAINS edges placed since its last publish (an edge
    is an upsert by id: sent once, it stays); ids from the user and period (``idf``: over the user's
    whole memory)."""
    user = index.user_id
    events: list[MemoryEvent] = []
    tag = f"toc@{at_ms}"
    for key in changed:
        period = index.periods[key]
        text, keywords = summary(index, key, said, idf)
        node_id = toc_node_id(user, key)
        properties = {"level": period.level, "period": key, "start_ms": str(period.start_ms),
                      "end_ms": str(period.end_ms), "episodes": str(index.count(key)),
                      "sessions": str(len(period.sessions)), "keywords": ",".join(keywords)}  # fmt: skip
        node = node_upserted(node_id, TOC_KIND, layer, at_ms, text=text, tokens=count(text), user_id=user,
                             properties=properties)  # fmt: skip
        events.append(memory_event(user, at_ms, [], NODE_UPSERTED, node, tag))
        placed = index.take_unpublished(key)
        targets = placed if period.level == "segment" else [toc_node_id(user, c) for c in placed]
        for target in targets:
            edge = edge_upserted(CONTAINS, node_id, target, layer)
            events.append(memory_event(user, at_ms, [], EDGE_UPSERTED, edge, tag))
    return events
