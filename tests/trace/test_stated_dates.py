"""Dates that turns state, resolved against when they were said, on the Trace's event nodes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import cast

import pytest

from engram.processors.timeline import (
    DATE_PROPERTY,
    SPAN_PROPERTY,
    StatedDate,
    date_of,
    date_properties,
    named_date,
    stated_date,
    time_expressions,
)
from engram.processors.trace.builder import TraceBuilder
from engram.schemas.records import NODE_UPSERTED, MemoryEvent, NodeUpserted
from tests.trace.turns import ref, turn

SAID = int(datetime(2023, 5, 8, 13, 56, tzinfo=UTC).timestamp() * 1000)  # a Monday afternoon


def _ms(year: int, month: int, day: int) -> int:
    return int(datetime(year, month, day, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("text", "label", "span"),
    [
        ("I went to a support group yesterday, so powerful!", "on 2023-05-07", "day"),
        ("Last Tuesday I ran my first 10k.", "on 2023-05-02", "day"),
        ("We moved here two weeks ago.", "the week of 2023-04-24", "week"),
        ("I took the kids camping last week", "the week of 2023-05-01", "week"),
        ("Next month we fly to Lisbon.", "in 2023-06", "month"),
        ("Last year was rough for me.", "in 2022", "year"),
        ("I had dinner with my mom on May 3, 2023.", "on 2023-05-03", "day"),
        ("We hiked there in March.", "in 2023-03", "month"),  # a month without a year: the last one
        ("I've been painting since 2016.", "in 2016", "year"),
        ("I'll call you tomorrow!", "on 2023-05-09", "day"),
    ],
)
def test_a_stated_time_resolves_against_when_it_was_said(text: str, label: str, span: str) -> None:
    stated = stated_date(text, SAID)
    assert stated is not None and stated.label() == label and stated.span == span


@pytest.mark.parametrize(
    "text",
    [
        "I recently adopted a puppy.",
        "Every Monday I go to the gym.",
        "I may 3 times a week go swimming.",  # "may" the verb
        "It was amazing, thanks for asking!",
        "Last summer was hot.",  # a season dateparser cannot place
    ],
)
def test_a_turn_that_names_no_date_states_none(text: str) -> None:
    assert stated_date(text, SAID) is None
    assert date_properties(text, SAID) == {}


def test_the_first_date_a_turn_states_is_its_date() -> None:
    text = "Two weeks ago I signed up, and next month I start."
    assert time_expressions(text) == ["two weeks ago", "next month"]
    assert date_properties(text, SAID) == {DATE_PROPERTY: "2023-04-24", SPAN_PROPERTY: "week"}


def test_a_question_names_a_date_only_with_its_year() -> None:
    assert named_date("What did John attend with his colleagues in March 2023?") == StatedDate(_ms(2023, 3, 1), "month")
    assert named_date("Who did Maria have dinner with on May 3, 2023?") == StatedDate(_ms(2023, 5, 3), "day")
    assert named_date("What did I do in 2022?") == StatedDate(_ms(2022, 1, 1), "year")
    assert named_date("Which spot did Joanna visit in May?") is None  # which May depends on when it is asked
    assert named_date("What did I do yesterday?") is None


def test_spans_end_where_the_next_begins() -> None:
    assert StatedDate(_ms(2023, 12, 1), "month").end_ms == _ms(2024, 1, 1)
    assert StatedDate(_ms(2022, 1, 1), "year").end_ms == _ms(2023, 1, 1)
    assert StatedDate(_ms(2023, 4, 24), "week").end_ms == _ms(2023, 5, 1)
    assert StatedDate(_ms(2023, 5, 7), "day").end_ms == _ms(2023, 5, 8)


def test_node_properties_round_trip_and_foreign_values_are_ignored() -> None:
    stated = StatedDate(_ms(2023, 5, 7), "day")
    assert date_of(stated.properties()) == stated
    assert date_of({}) is None
    assert date_of({DATE_PROPERTY: "2023-05-07"}) is None
    assert date_of({DATE_PROPERTY: "7 May", SPAN_PROPERTY: "day"}) is None
    assert date_of({DATE_PROPERTY: "2023-05-07", SPAN_PROPERTY: "fortnight"}) is None


def _node_properties(events: list[MemoryEvent]) -> dict[str, dict[str, str]]:
    nodes = [cast(NodeUpserted, e["change"][1]) for e in events if e["change"][0] == NODE_UPSERTED]
    return {n["properties"]["turn_id"]: n["properties"] for n in nodes if n["kind"] == "event"}


def test_the_trace_puts_the_stated_date_on_the_event_node_and_a_replay_gives_the_same() -> None:
    turns = [
        turn(0, "I went to a support group yesterday!"),
        turn(1, "That sounds so powerful, how was it?", role="assistant"),
        turn(2, "Next month I start my counseling course."),
    ]
    # tests.trace.turns says them at 2023-11-14 22:13 UTC
    whole = TraceBuilder().apply_batch([(t, ref(i)) for i, t in enumerate(turns)])
    one_by_one = TraceBuilder()
    apart = [e for i, t in enumerate(turns) for e in one_by_one.apply(t, ref(i))]
    assert whole == apart
    props = _node_properties(whole)
    assert (props["s1-t0"][DATE_PROPERTY], props["s1-t0"][SPAN_PROPERTY]) == ("2023-11-13", "day")
    assert DATE_PROPERTY not in props["s1-t1"] and SPAN_PROPERTY not in props["s1-t1"]
    assert (props["s1-t2"][DATE_PROPERTY], props["s1-t2"][SPAN_PROPERTY]) == ("2023-12-01", "month")
