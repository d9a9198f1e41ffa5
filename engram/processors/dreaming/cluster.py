"""Clustering (seed 000 §5.2): episodes that share a concept anchor form a cluster.

A cluster is the set of episodes whose anchors A(v) (the concepts they REF, eq. 5) contain one
concept, dormant ones included (a gist abstracts the concept's whole history), up to the dream's
time. Only clusters of at least ``min_cluster`` episodes are abstracted, and only when they hold an
episode their concept's gist does not cite yet: an unchanged cluster is not dreamed again.

Also the shared text tools of the stages: sentences with their analyzed terms, and TF-IDF
centrality (a sentence's cosine to the centroid of its group), deterministic and order-independent.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from engram.processors.dreaming.config import DreamConfig
from engram.processors.dreaming.episode_index import concept_members
from engram.processors.dreaming.graph import GIST_KIND, DreamGraph
from engram.processors.dreaming.rows import Episode
from engram.processors.dreaming.text import SentenceFrequencies, split_sentences
from engram.schemas.events import stable_id


@dataclass(frozen=True, slots=True)
class Cluster:
    anchor: str  # the concept id
    label: str
    members: tuple[Episode, ...]  # (time, id) order


@dataclass(frozen=True, slots=True)
class Sentence:
    text: str
    node_id: str
    time_ms: int
    terms: tuple[str, ...]
    index: int = 0  # its place among its episode's sentences (split_sentences)

    @property
    def ref(self) -> str:
        """``<episode id>#<index>``: how a gist's CENTRAL property names it."""
        return f"{self.node_id}#{self.index}"


@lru_cache(maxsize=1 << 16)
def consolidated_id(user_id: str, kind: str, subject: str) -> str:
    """The node id of a consolidated node: one per user, kind and subject (a concept, a fact, an
    entity), so dreaming the same subject again upserts it (cached: every dream asks again for every
    concept, fact and entity)."""
    return stable_id("dream", user_id, kind, subject)


def clusters(graph: DreamGraph, at_ms: int, config: DreamConfig) -> list[Cluster]:
    """Clusters that need abstracting at ``at_ms``, in anchor order."""
    index = graph.index
    if index.covers(at_ms):
        by_anchor = index.by_concept
    else:  # episodes after the dream's time: left out
        by_anchor = concept_members(e for e in graph.episodes.values() if e.time_ms <= at_ms)
    out: list[Cluster] = []
    for anchor in sorted(by_anchor):
        ids = by_anchor[anchor]
        if len(ids) < config.min_cluster:
            continue
        gist = graph.consolidated.get(consolidated_id(graph.user_id, GIST_KIND, anchor))
        if gist is not None and ids.keys() <= gist.cites:
            continue  # covered by its gist: most anchors of a long history
        found = [graph.episodes[i] for i in ids]
        if not any(not m.dormant for m in found):
            continue
        members = tuple(sorted(found, key=lambda e: (e.time_ms, e.node_id)))
        label = graph.concepts[anchor].label if anchor in graph.concepts else ""
        out.append(Cluster(anchor, label, members))
    return out


def sentences(episodes: Iterable[Episode]) -> list[Sentence]:
    """The episodes' sentences with enough content terms to summarise anything."""
    return sentences_of((e.node_id, e.text, e.time_ms) for e in episodes)


def sentences_of(texts: Iterable[tuple[str, str, int]]) -> list[Sentence]:
    """Sentences of (node id, text, time ms) triples, those with at least ``MIN_SENTENCE_TERMS``."""
    return [Sentence(text, node_id, time_ms, words, i) for node_id, whole, time_ms in texts
            for i, (text, words) in enumerate(split_sentences(whole))]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Idf:
    """Inverse document frequencies over all of a user's sentences: what the user says everywhere
    ("sounds great") weighs little, what a cluster says distinctively weighs much."""

    df: dict[str, int]
    n: int
    weights: dict[str, float] = field(default_factory=dict, compare=False)  # each term's, computed once
    units: dict[tuple[str, ...], dict[str, float]] = field(default_factory=dict, compare=False)

    @staticmethod
    def of(group: Iterable[Sentence]) -> Idf:
        df: Counter[str] = Counter()
        n = 0
        for s in group:
            df.update(set(s.terms))
            n += 1
        return Idf(dict(df), n)

    @staticmethod
    def over(frequencies: SentenceFrequencies) -> Idf:
        """The IDF of counts kept as episodes arrive (DreamGraph.frequencies); reads them, copies nothing."""
        return Idf(frequencies.df, frequencies.n)

    def weight(self, term: str) -> float:
        found = self.weights.get(term)
        if found is None:
            found = self.weights[term] = math.log(1.0 + self.n / self.df.get(term, 1))
        return found

    def ceiling(self) -> float:
        """No term's ``weight`` exceeds this (a df is at least 1), with a margin for ``log``'s rounding."""
        return math.log(1.0 + self.n) * (1.0 + 1e-9)

    def unit(self, words: tuple[str, ...]) -> dict[str, float]:
        """A sentence's L2-normalized TF-IDF vector (a dream's counterfactual checks rank the same
        sentences again and again under one IDF)."""
        found = self.units.get(words)
        if found is None:
            found = self.units[words] = _unit({t: c * self.weight(t) for t, c in Counter(words).items()})
        return found


def centrality(group: Sequence[Sentence], idf: Idf | None = None, mass: Sequence[float] = ()) -> list[float]:
    """Each sentence's TF-IDF cosine to the group's centroid (0.0 for an empty vector); IDF from
    ``idf`` (the user's whole memory) when given, else from the group itself. ``mass``, when given,
    weighs each sentence's vector in the centroid (a sentence standing for many others weighs more)."""
    weights = idf or Idf.of(group)
    vectors = [weights.unit(s.terms) for s in group]
    centroid: dict[str, float] = {}  # summed in the order a Counter.update would: the same floats
    get = centroid.get
    for i, v in enumerate(vectors):
        m = mass[i] if mass else 1.0
        for t, x in v.items():
            centroid[t] = (x * m if mass else x) + get(t, 0)
    norm = math.sqrt(sum(x * x for x in centroid.values())) or 1.0
    return [sum([w * centroid[t] for t, w in v.items()]) / norm for v in vectors]


def central(group: Sequence[Sentence], k: int, idf: Idf | None = None, mass: Sequence[float] = ()) -> list[Sentence]:
    """The ``k`` most central distinct sentences (ties by time, then text), in time order."""
    scores = centrality(group, idf, mass)
    ranked = sorted(range(len(group)), key=lambda i: (-round(scores[i], 9), group[i].time_ms, group[i].text))
    chosen: dict[tuple[str, ...], Sentence] = {}
    for i in ranked:
        chosen.setdefault(tuple(sorted(set(group[i].terms))), group[i])
        if len(chosen) == k:
            break
    return sorted(chosen.values(), key=lambda s: (s.time_ms, s.node_id, s.text))


def _unit(vector: dict[str, float]) -> dict[str, float]:
    norm = math.sqrt(sum(x * x for x in vector.values()))
    return {t: x / norm for t, x in vector.items()} if norm else {}
