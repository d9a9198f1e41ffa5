"""Time in questions: "when" ranks the turns that state a date; a named date, the turns inside it."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import numpy as np
import pytest

from engram.processors.rebac import Viewer
from engram.processors.retrieval.dated import asks_when, named_window, time_match, with_dated
from engram.processors.retrieval.hybrid import BALANCED, hybrid_search
from engram.processors.retrieval.types import Candidate, NodeRecord
from engram.processors.retrieval.view import MemoryView
from engram.processors.timeline import StatedDate
from engram.schemas.events import stable_id
from engram.schemas.records import LAYERS
from tests.retrieval.builders import USER, Events, ids_of, ranking_of


def _ms(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, 12, tzinfo=UTC).timestamp() * 1000)


class Records:
    def __init__(self, *nodes: tuple[str, int, StatedDate | None]) -> None:
        self._records = {
            node_id: NodeRecord(
                node_id, "event", "USER", "u", "s", node_id, 5, said, {} if stated is None else stated.properties()
            )
            for node_id, said, stated in nodes
        }

    def node(self, node_id: str) -> NodeRecord | None:
        return self._records.get(node_id)


def _day(year: int, month: int, day: int) -> StatedDate:
    return StatedDate(int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1000), "day")


@pytest.mark.parametrize(
    "question",
    [
        "When did Melanie paint a sunrise?",
        "What year did John start surfing?",
        "In which month did Tim visit the UK?",
        "How long ago was Caroline's 18th birthday?",
        "How many days ago did I meet Emma?",
        "How many weeks passed between adopting Coco and Shadow?",
    ],
)
def test_questions_that_ask_for_a_date(question: str) -> None:
    assert asks_when(question)


@pytest.mark.parametrize(
    "question",
    [
        "What did Melanie paint?",
        "What did she say when I asked about the trip?",
        "Which book did I read?",
        "How long has Nate had his first two turtles?",  # a duration: the turn says "for three years"
        "How many days did it take me to finish the book?",
    ],
)
def test_questions_that_do_not(question: str) -> None:
    assert not asks_when(question)


def test_when_lifts_the_turn_that_states_a_date() -> None:
    memory = Records(("chat", _ms(2023, 5, 8), None), ("dated", _ms(2023, 5, 8), _day(2023, 5, 7)))
    ranking = ranking_of("chat", "dated")
    got = time_match(memory, ranking, "When did Caroline go to the support group?", when_boost=0.5, anchor_boost=0.5)
    assert ids_of(got) == ["dated", "chat"]
    assert got[0].score == pytest.approx(0.9 * 1.5)
    same = time_match(memory, ranking, "What did Caroline do at the support group?", when_boost=0.5, anchor_boost=0.5)
    assert same == ranking  # no time in the question: nothing moves
    off = time_match(memory, ranking, "When did Caroline go to the support group?", when_boost=0.0, anchor_boost=0.5)
    assert off == ranking


def test_a_named_date_lifts_the_turns_dated_inside_it() -> None:
    memory = Records(
        ("other_day", _ms(2023, 5, 20), None),  # said on another day, states none
        ("said_then", _ms(2023, 5, 3), None),  # said on the day
        ("told_later", _ms(2023, 5, 4), _day(2023, 5, 3)),  # "yesterday", said the day after
        ("said_then_about_before", _ms(2023, 5, 3), _day(2023, 4, 1)),  # said that day about another
    )
    ranking = ranking_of("other_day", "said_then_about_before", "said_then", "told_later")
    got = time_match(
        memory, ranking, "Who did Maria have dinner with on May 3, 2023?", when_boost=0.5, anchor_boost=1.0
    )
    assert ids_of(got) == ["said_then", "told_later", "other_day", "said_then_about_before"]


class _Dated:
    """A memory whose time search returns fixed lists."""

    def __init__(self, lists: dict[str, list[Candidate]]) -> None:
        self.lists = lists
        self.asked: tuple[str, tuple[int, int]] | None = None

    def dated_lists(
        self, query: str, query_vector: object, window: tuple[int, int], k: int, viewer: Viewer,
        layers: object, kinds: object = None,
    ) -> dict[str, list[Candidate]]:  # fmt: skip
        self.asked = (query, window)
        return self.lists


def test_the_turns_of_a_named_time_join_the_lists_at_their_last_score() -> None:
    lists = {"vector": [Candidate("a", 0.9, "vector"), Candidate("b", 0.5, "vector")], "bm25": []}
    memory = _Dated({"vector": [Candidate("b", 0.5, "vector"), Candidate("old", 0.2, "vector")],
                     "bm25": [Candidate("old", 3.0, "bm25")]})  # fmt: skip
    query = "What did Nate change in April 2022?"
    window = named_window(query)
    assert window == (_ms(2022, 4, 1) - 12 * 3600 * 1000, _ms(2022, 5, 1) - 12 * 3600 * 1000)
    got = with_dated(memory, lists, query, None, window, 10, Viewer(USER), LAYERS, None)
    assert memory.asked == (query, window)
    assert [(c.node_id, c.score) for c in got["vector"]] == [("a", 0.9), ("b", 0.5), ("old", 0.2)]
    assert got["bm25"] == []  # an empty list stays empty: nothing to join
    assert with_dated(object(), lists, query, None, window, 10, Viewer(USER), LAYERS, None) == lists
    assert named_window("What did Nate change last April?") is None  # no year: no time to search


def test_a_question_naming_a_date_finds_a_turn_of_that_time_its_words_miss() -> None:
    rng = np.random.default_rng(3)
    query_vector = rng.standard_normal(8).astype(np.float32)
    events = Events(offset=_ms(2022, 3, 1))
    for i in range(40):  # March: the quarterly report, over and over
        events.node(stable_id(USER, i), f"the quarterly report {i} went out", vector=rng.standard_normal(8).tolist())
    events.offset = _ms(2022, 4, 12)
    events.node("dyed", "dyed my hair purple", vector=(-query_vector).tolist())  # the least like the question
    events.offset = _ms(2022, 5, 2)
    for i in range(40, 80):
        events.node(stable_id(USER, i), f"the quarterly report {i} went out", vector=rng.standard_normal(8).tolist())
    view = MemoryView()
    view.apply(events.events)
    query = "What change did Nate make to his look in April 2022?"
    window = named_window(query)
    assert window is not None
    dated = view.dated_lists(query, query_vector, window, 10, Viewer(USER), LAYERS)
    assert [c.node_id for c in dated["vector"]] == ["dyed"] and dated["bm25"] == []
    config = replace(BALANCED, pool=10)
    found = hybrid_search(view, query, 10, Viewer(USER), LAYERS, query_vector=query_vector, config=config)
    assert "dyed" in ids_of(found.lists["vector"])  # a candidate the reranks see
    assert "dated" in found.timings_ms
    off = hybrid_search(view, query, 10, Viewer(USER), LAYERS, query_vector=query_vector,
                        config=replace(config, anchor_boost=0.0))  # fmt: skip
    assert "dyed" not in ids_of(off.lists["vector"])
