"""Tallies (processors/toc/tally.py): a period's keywords read from counts kept by difference are
exactly those of ranking every term it holds, after any sequence of episodes placed and removed."""

from __future__ import annotations

import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from engram.processors.dreaming.cluster import Idf, sentences_of
from engram.processors.toc import Said, TocIndex, summary
from engram.processors.toc import tallies as tallies_module
from engram.processors.toc.index import period_keys
from engram.processors.toc.publish import digest
from engram.processors.toc.tallies import HOT, Tallies, frozen, thawed
from engram.processors.toc.tally import Tally

DAY_MS = 86_400_000
WORDS = ["garden", "gardening", "tomato", "tomatoes", "budget", "finance", "hiking", "hike", "river", "Paris"]


@settings(max_examples=200, deadline=None)
@given(
    st.dictionaries(st.sampled_from([f"t{i}" for i in range(40)]), st.integers(1, 9), max_size=40),
    st.dictionaries(st.sampled_from([f"t{i}" for i in range(40)]), st.integers(1, 50)),
    st.integers(1, 6),
)
def test_top_is_the_full_ranking_cut_at_k(counts: dict[str, int], df: dict[str, int], k: int) -> None:
    idf = Idf(df, max([50, *df.values()]))
    tally = Tally.of(counts, {})
    assert tally.top(k, idf.weight, idf.ceiling()) == sorted(counts, key=lambda t: (-counts[t] * idf.weight(t), t))[:k]
    assert all(idf.weight(t) <= idf.ceiling() for t in counts)


def test_shifting_back_to_zero_leaves_nothing() -> None:
    tally = Tally.of({"hik": 2, "river": 1}, {("hik", "hiking"): 1, ("hik", "hike"): 1, ("river", "river"): 1})
    assert tally.surface("hik") == "hike" and tally.surface("unknown") == "unknown"  # a tie goes to the word
    tally.shift({"hik": -2, "river": -1}, {("hik", "hiking"): -1, ("hik", "hike"): -1, ("river", "river"): -1})
    assert tally == Tally()
    assert math.isclose(Idf({}, 0).ceiling(), 0.0)


Step = tuple[int, int, int, int]  # (episode, day, session, text seed); episode < 0: remove it


@st.composite
def histories(draw: st.DrawFn) -> list[Step]:
    return draw(
        st.lists(st.tuples(st.integers(-6, 12), st.integers(0, 70), st.integers(0, 2), st.integers(0, 99)), max_size=40)
    )


def _text(seed: int) -> str:
    words = [WORDS[(seed * (i + 3)) % len(WORDS)] for i in range(3 + seed % 5)]
    return f"{' '.join(words)}. The {WORDS[seed % len(WORDS)]} again and the {WORDS[(seed // 7) % len(WORDS)]}."


@settings(max_examples=80, deadline=None)
@given(histories(), st.integers(1, 4), st.sampled_from([0, 1, 3, HOT]))
def test_published_summaries_equal_those_of_an_index_built_afresh(steps: list[Step], every: int, hot: int) -> None:
    """Episodes placed, re-placed and removed, with summaries read every few steps (so tallies are
    shifted, not rebuilt) and all but the ``hot`` last used tallies frozen after each read: every
    period's summary then equals that of a new index of the same episodes, whose tallies are all
    counted from scratch; and each tally is the episodes' counts."""
    index = TocIndex("u", tallies=Tallies(hot))
    said: dict[str, Said] = {}
    where: dict[str, tuple[int, str]] = {}
    for n, (episode, day, session, seed) in enumerate(steps):
        node = f"e{abs(episode)}"
        if episode < 0 and node in where:
            index.remove(node, *where.pop(node))
            del said[node]
        elif episode >= 0 and node not in where:
            where[node] = (day * DAY_MS + seed, f"s{session}")
            said[node] = Said(_text(seed), where[node][0])
            index.add(node, *where[node])
        if n % every == 0:
            idf = _idf(said)
            for key in index.take_changed():
                summary(index, key, said, idf)
            index.tallies.settle()
            assert index.tallies.live() <= hot
    fresh = TocIndex("u")
    for placed, (time_ms, in_session) in where.items():
        fresh.add(placed, time_ms, in_session)
    idf = _idf(said)
    for key in fresh.periods:
        assert summary(index, key, said, idf) == summary(fresh, key, said, idf)
        digest(index, key, said)
        ids = index.episodes_under(key)
        terms = Counter(t for s in sentences_of((i, said[i].text, 0) for i in ids) for t in s.terms)
        assert index.tallies[key].counts == dict(terms)
    assert index.tallies.keys() <= index.periods.keys()


def _idf(said: dict[str, Said]) -> Idf:
    return Idf.of(sentences_of((i, s.text, s.time_ms) for i, s in said.items()))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["hik", "river"]), st.sampled_from(["hike", "hiking", "hikes", "river"]),
                          st.integers(-2, 3)), max_size=30))  # fmt: skip
def test_forms_held_as_one_pair_or_a_dict_count_what_a_dict_per_stem_counts(shifts: list[tuple[str, str, int]]) -> None:
    """A stem's words are one (word, count) pair while it has one word and a dict while it has more:
    the words, their counts and each stem's surface word are those a dict per stem keeps."""
    tally, reference = Tally(), Counter[tuple[str, str]]()
    for stem, word, n in shifts:
        tally.shift({}, {(stem, word): n})
        reference[(stem, word)] += n
        kept = {pair: count for pair, count in reference.items() if count}
        assert dict(tally.pairs()) == kept
        for root in ("hik", "river", "none"):
            words = {w: c for (s, w), c in kept.items() if s == root}
            assert tally.surface(root) == (min(words.items(), key=lambda i: (-i[1], i[0]))[0] if words else root)
            assert isinstance(tally.forms.get(root, ()), tuple) == (len(words) <= 1)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["hik", "river", "x"]), st.sampled_from(["hike", "hiking", "river", "x"]),
                          st.integers(-2, 3)), max_size=30))  # fmt: skip
def test_a_frozen_tally_thaws_to_the_same_counts_words_keywords_and_surface_words(
    shifts: list[tuple[str, str, int]],
) -> None:
    tally = Tally()
    for stem, word, n in shifts:
        tally.shift({stem: n}, {(stem, word): n})
    again = thawed(frozen(tally))
    assert again == tally and dict(again.pairs()) == dict(tally.pairs())
    weight = {"hik": 1.0, "river": 2.0, "x": 0.5}.__getitem__
    assert again.top(2, weight, 2.0) == tally.top(2, weight, 2.0)
    assert [again.surface(s) for s in ("hik", "river", "x")] == [tally.surface(s) for s in ("hik", "river", "x")]


def test_tallies_keep_the_last_used_as_objects_and_thaw_the_others_on_reading() -> None:
    tallies = Tallies(hot=2)
    for n, key in enumerate(["a", "b", "c"]):
        tallies[key] = Tally.of({key: n + 1}, {(key, key + "s"): n + 1})
    assert tallies.get("a") is not None  # a is now the last used: b goes first
    tallies.settle()
    assert tallies.live() == 2 and tallies.keys() == {"a", "b", "c"} and "b" in tallies and len(tallies) == 3
    thawed_b = tallies["b"]
    assert thawed_b.counts == {"b": 2} and thawed_b.surface("b") == "bs" and tallies.live() == 3
    assert tallies.pop("c") == Tally.of({"c": 3}, {("c", "cs"): 3}) and "c" not in tallies
    tallies.settle()
    tallies.discard("a")
    tallies.discard("b")
    assert len(tallies) == 0 and tallies.get("b") is None and tallies.pop("zz") is None


def test_between_two_dreams_a_user_keeps_the_tallies_the_last_read_and_the_next_thaws_none(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A dream reads its changed segments' paths, coarsest level first. ``settle`` freezes what it
    did not read: the next dream, with episodes in the same sessions, reads only tallies in hand
    (it thaws none), and what is in hand is its paths, not the most recently used ``HOT``."""
    thaws: list[bytes] = []

    def counted(data: bytes) -> Tally:
        thaws.append(data)
        return thawed(data)

    monkeypatch.setattr(tallies_module, "thawed", counted)
    index, said = TocIndex("u"), dict[str, Said]()

    def dream(episodes: list[tuple[int, int, int]]) -> None:
        for day, session, seed in episodes:
            node = f"e{len(said)}"
            said[node] = Said(_text(seed), day * DAY_MS + seed)
            index.add(node, day * DAY_MS + seed, f"s{session}")
        idf = _idf(said)
        for key in index.take_changed():
            summary(index, key, said, idf)
        index.settle()

    dream([(day, session, 7 * day + session) for day in range(3) for session in range(4)])  # 12 segments
    assert len(index.tallies) > HOT and thaws == []
    dream([(2, 2, 40), (2, 3, 41)])
    assert thaws == []
    assert index.tallies.live() == 6  # the two segments, their day, week, month and year
    in_hand = {key for _, key, _, _ in period_keys(2 * DAY_MS + 40, "s2")} | {
        key for _, key, _, _ in period_keys(2 * DAY_MS + 41, "s3")
    }
    assert len(in_hand) == 6 and all(index.tallies.get(key) is not None for key in in_hand) and thaws == []
    earlier = next(key for _, key, _, _ in period_keys(0, "s0") if index.periods[key].level == "segment")
    assert index.tallies.get(earlier) is not None and len(thaws) == 1  # an earlier day's segment was frozen
