"""TOC summaries and the MemoryEvents that publish the periods a dream saw change.

A period's summary is deterministic and extractive (seed 002: "title, bullets, keywords"): its
episode and session counts, its most distinctive terms (TF-IDF against the user's whole memory)
and its most central sentences, at most ``SUMMARY_CHARS`` characters. Each published period is a
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
from engram.schemas.events import edge_upserted, memory_event, node_upserted, stable_id
from engram.schemas.records import EDGE_UPSERTED, NODE_UPSERTED, Layer, MemoryEvent

TOC_KIND: Final = "toc"
CONTAINS: Final = "CONTAINS"
SUMMARY_CHARS: Final = 400
KEYWORDS: Final = 6
SENTENCES: Final = 2
_WORD: Final = re.compile(r"[a-z0-9]+")


@dataclass(frozen=True, slots=True)
class Said:
    """What the TOC reads of an episode."""

    text: str
    time_ms: int


def toc_node_id(user_id: str, key: str) -> str:
    return stable_id("toc", user_id, key)


def summary(index: TocIndex, key: str, said: Mapping[str, Said], idf: Idf) -> tuple[str, list[str]]:
    """(summary text, keywords) of a period."""
    period = index.periods[key]
    ids = [i for i in index.episodes_under(key) if i in said]
    group: list[Sentence] = sentences_of((i, said[i].text, said[i].time_ms) for i in ids)
    counts: Counter[str] = Counter(t for s in group for t in s.terms)
    ranked = sorted(counts, key=lambda t: (-counts[t] * idf.weight(t), t))[:KEYWORDS]
    head = f"{period.level} {key}: {len(ids)} episodes, {len(period.sessions)} sessions"
    shown = _surface(ranked, (s.text for s in group))
    text = f"{head}. Keywords: {', '.join(shown)}." if ranked else f"{head}."
    for s in central(group, SENTENCES, idf):
        if len(text) + len(s.text) + 1 > SUMMARY_CHARS:
            break
        text += f" {s.text}"
    return text[:SUMMARY_CHARS], ranked


def _surface(stems: list[str], texts: Iterable[str]) -> list[str]:
    """Each keyword stem as people read it: its most frequent word in the period ("hiking", not "hik")."""
    wanted = set(stems)
    words: Counter[tuple[str, str]] = Counter()
    for text in texts:
        words.update((stem(w), w) for w in _WORD.findall(text.lower()) if stem(w) in wanted)
    best: dict[str, str] = {}
    for (root, word), _ in sorted(words.items(), key=lambda item: (-item[1], item[0][1])):
        best.setdefault(root, word)
    return [best.get(root, root) for root in stems]


def toc_events(
    index: TocIndex, changed: list[str], at_ms: int, *, said: Mapping[str, Said], layer: Layer,
    count: Callable[[str], int],
) -> list[MemoryEvent]:  # fmt: skip
    """NodeUpserted per changed period and its CONTAINS edges; ids from the user and period."""
    user = index.user_id
    idf = Idf.of(sentences_of((i, s.text, s.time_ms) for i, s in said.items()))
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
        targets = [toc_node_id(user, c) for c in sorted(period.children)] or sorted(period.episodes)
        for target in targets:
            edge = edge_upserted(CONTAINS, node_id, target, layer)
            events.append(memory_event(user, at_ms, [], EDGE_UPSERTED, edge, tag))
    return events
