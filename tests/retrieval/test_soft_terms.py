"""Soft term matching (processors/retrieval/soft_terms.py): a question that names a kind finds the
named person's turns that name an instance."""

from __future__ import annotations

from engram.processors.retrieval.soft_terms import WordVectors, query_words, term_match
from engram.processors.retrieval.view import MemoryView
from tests.retrieval.builders import Events, ids_of, ranking_of

QUESTION = "What instruments does John play?"


def _view(turns: dict[str, tuple[str, str]]) -> MemoryView:
    events = Events()
    for node_id, (speaker, text) in turns.items():
        events.node(node_id, text, properties={"speaker": speaker})
    view = MemoryView()
    view.apply(events.events)
    return view


TURNS = {
    "weather": ("John", "The weather was lovely on the drive to work today"),
    "violin": ("John", "Some me-time each day: running, reading, or my violin"),
    "ann": ("Ann", "I finally bought a violin last month"),
    "dinner": ("John", "We had dinner with my parents on Sunday"),
}


def test_a_turn_naming_an_instance_of_what_is_asked_rises() -> None:
    ranked = term_match(
        _view(TURNS), ranking_of("weather", "dinner", "violin", "ann"), QUESTION,
        weight=0.3, threshold=0.4, author_property="speaker",
    )  # fmt: skip
    assert ids_of(ranked)[0] == "violin"
    assert ids_of(ranked).index("ann") == 3  # Ann is not who the question asks about: unchanged


def test_nothing_changes_when_the_question_names_no_author() -> None:
    ranking = ranking_of("weather", "dinner", "violin", "ann")
    ranked = term_match(
        _view(TURNS), ranking, "What instruments do I play?", weight=0.3, threshold=0.4, author_property="speaker"
    )
    assert ids_of(ranked) == ids_of(ranking)
    assert [c.score for c in ranked] == [c.score for c in ranking]


def test_query_words_drop_stopwords_and_names_but_keep_acronyms() -> None:
    assert query_words("What activities does Melanie partake in?") == ["activities", "partake"]
    assert query_words("When did Caroline go to the LGBTQ support group?") == ["lgbtq", "support", "group"]


def test_a_words_vector_does_not_depend_on_what_the_cache_held() -> None:
    small, large = WordVectors(capacity=3, texts=1), WordVectors()
    words = ["yoga", "violin", "instruments", "exercise", "yoga", "painting"]
    with small.lock, large.lock:
        for word in words:
            assert (small.units(small.words([word])) == large.units(large.words([word]))).all()
            assert small.rarity(small.words([word])) == large.rarity(large.words([word]))
        assert small.rarity(small.words(["the"]))[0] < small.rarity(small.words(["violin"]))[0]


def test_rows_taken_together_stay_valid_when_the_cache_is_dropped_on_the_way() -> None:
    small, large = WordVectors(capacity=4, texts=8), WordVectors()
    texts = ["violin lessons", "yoga class tonight", "painting sunsets"]
    with small.lock, large.lock:
        asked, cells = small.rows(["instruments"], texts)
        wanted, wanted_cells = large.rows(["instruments"], texts)
        assert (small.units(asked) == large.units(wanted)).all()
        for got, want in zip(cells, wanted_cells, strict=True):
            assert (small.units(got) == large.units(want)).all()
