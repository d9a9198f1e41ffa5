"""The newer statement ranks first: same-thing candidates at the top of a ranking, newest first."""

from __future__ import annotations

from engram.processors.retrieval.newer import (
    newer_first,
    pool_idf,
    sentences,
    states_other_value,
    weighted_jaccard,
)
from engram.processors.retrieval.text import terms
from engram.processors.retrieval.types import NodeRecord
from tests.retrieval.builders import ids_of, ranking_of

QUERY = "How many followers do I have on Instagram now?"
OLD_COUNT = "I posted a reel today. By the way, I've got 1250 followers on Instagram now."
NEW_COUNT = "Can you suggest a caption? I think my follower count is close to 1300 now."
OTHER = "I baked sourdough bread and my Instagram friends loved the photos."


class Records:
    def __init__(self, *nodes: tuple[str, str, int], speakers: dict[str, str] | None = None) -> None:
        said = speakers or {}
        self._records: dict[str, NodeRecord] = {}
        for node_id, text, time_ms in nodes:
            properties = {"speaker": said[node_id]} if node_id in said else {}
            record = NodeRecord(node_id, "event", "USER", "u", "s", text, len(text.split()), time_ms, properties)
            self._records[node_id] = record

    def node(self, node_id: str) -> NodeRecord | None:
        return self._records.get(node_id)


def test_a_restated_quantity_hands_the_older_place_to_the_newer() -> None:
    memory = Records(("old", OLD_COUNT, 1_000), ("other", OTHER, 1_500), ("new", NEW_COUNT, 2_000))
    ranking = ranking_of("old", "other", "new")
    got = newer_first(memory, ranking, QUERY, depth=4, similarity=0.16)
    assert ids_of(got) == ["new", "other", "old"]
    # the places keep their scores: only who holds them changes
    assert [c.score for c in got] == [c.score for c in ranking]
    assert [c.source for c in got] == ["hybrid"] * 3


def test_an_older_statement_already_below_the_newer_stays_there() -> None:
    memory = Records(("old", OLD_COUNT, 1_000), ("new", NEW_COUNT, 2_000))
    ranking = ranking_of("new", "old")
    assert newer_first(memory, ranking, QUERY, depth=4, similarity=0.16) == ranking


def test_near_repeated_sentences_link_and_unrelated_ones_do_not() -> None:
    query = "Where do I keep my old sneakers?"
    memory = Records(
        ("before", "Tips please. I keep my old sneakers under the bed in a box.", 1),
        ("shoes", "I bought new running shoes for the marathon.", 2),
        ("after", "I moved my old sneakers: I keep them in a shoe rack in the closet now.", 3),
    )
    got = newer_first(memory, ranking_of("before", "shoes", "after"), query, depth=3, similarity=0.16)
    assert ids_of(got) == ["after", "shoes", "before"]


def test_only_the_first_depth_candidates_take_part() -> None:
    memory = Records(("old", OLD_COUNT, 1_000), ("a", OTHER, 1_100), ("b", "Instagram ads cost money.", 1_200),
                     ("new", NEW_COUNT, 2_000))  # fmt: skip
    ranking = ranking_of("old", "a", "b", "new")
    assert newer_first(memory, ranking, QUERY, depth=3, similarity=0.9) == ranking
    assert ids_of(newer_first(memory, ranking, QUERY, depth=4, similarity=0.9))[0] == "new"
    assert newer_first(memory, ranking, QUERY, depth=1, similarity=0.0) == ranking


def test_a_group_is_ordered_newest_first_ties_by_rank_and_unknown_nodes_stay() -> None:
    query = "What is my Ticket to Ride high score?"
    memory = Records(
        ("s1", "My Ticket to Ride high score is 112 points.", 10),
        ("s3", "My Ticket to Ride high score is now 132 points.", 30),
        ("s2", "My Ticket to Ride high score went up to 124 points.", 20),
        ("tie", "My Ticket to Ride high score is 112 points, I said.", 30),
    )
    ranking = ranking_of("s1", "missing", "s3", "s2", "tie")
    got = newer_first(memory, ranking, query, depth=5, similarity=0.16)
    assert ids_of(got) == ["s3", "missing", "tie", "s2", "s1"]


def test_only_what_the_same_author_said_is_superseded() -> None:
    query = "How many cats do you have?"
    said = "I have 3 cats at home."
    memory = Records(("ann", said, 1), ("bob", "I have 4 cats at home.", 2), speakers={"ann": "Ann", "bob": "Bob"})
    ranking = ranking_of("ann", "bob")
    assert newer_first(memory, ranking, query, depth=4, similarity=0.16) == ranking
    also_ann = Records(("ann", said, 1), ("bob", "I have 4 cats at home.", 2), speakers={"ann": "Ann", "bob": "Ann"})
    assert ids_of(newer_first(also_ann, ranking, query, depth=4, similarity=0.16)) == ["bob", "ann"]
    other_key = newer_first(memory, ranking, query, depth=4, similarity=0.16, author_property="author")
    assert ids_of(other_key) == ["bob", "ann"]


def test_a_query_without_index_terms_changes_nothing() -> None:
    memory = Records(("old", OLD_COUNT, 1), ("new", NEW_COUNT, 2))
    ranking = ranking_of("old", "new")
    assert newer_first(memory, ranking, "what is it?", depth=4, similarity=0.0) == ranking


def test_the_parts() -> None:
    assert sentences("One. Two? Three!\nFour") == ["One.", "Two?", "Three!", "Four"]
    idf = pool_idf(["red apple", "red pear", "green apple"])
    assert idf["pear"] > idf["red"] > 0
    a, b = frozenset(terms("red apple")), frozenset(terms("green apple"))
    assert 0 < weighted_jaccard(a, b, idf) < 1
    assert weighted_jaccard(frozenset(), frozenset(), idf) == 0.0
    asked = frozenset(terms("how many followers"))
    assert states_other_value(frozenset(terms("1250 followers")), frozenset(terms("1300 followers")), asked)
    assert not states_other_value(frozenset(terms("1250 followers")), frozenset(terms("1250 followers")), asked)
    assert not states_other_value(frozenset(terms("1250 followers")), frozenset(terms("1300 likes")), asked)
    assert not states_other_value(frozenset(terms("many followers")), frozenset(terms("1300 followers")), asked)
