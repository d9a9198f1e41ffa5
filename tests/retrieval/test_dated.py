"""Time in questions: "when" ranks the turns that state a date; a named date, the turns inside it."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engram.processors.retrieval.dated import asks_when, time_match
from engram.processors.retrieval.types import NodeRecord
from engram.processors.timeline import StatedDate
from tests.retrieval.builders import ids_of, ranking_of


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
