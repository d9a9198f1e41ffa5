"""The time hierarchy (processors/toc): periods, summaries and events, time anchors, agentic
search within its bounds, and `engram toc` on an event log."""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from engram.processors.dreaming.cluster import Idf, sentences_of
from engram.processors.toc import (
    CONTAINS,
    TOC_KIND,
    Said,
    TimeRange,
    TocBounds,
    TocIndex,
    summary,
    time_anchor,
    toc_events,
    toc_node_id,
    toc_search,
)
from engram.schemas.changes import change_as
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import NODE_UPSERTED, EdgeUpserted, EventRef, MemoryEvent, NodeUpserted
from engram.sinks.eventlog.sink import EventLogSink
from engram.streams.cli import main as cli_main


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


# Two sessions across a month boundary (Thu 30 Apr -> Fri 1 May 2026: one ISO week, two months).
EPISODES = [
    ("e1", ms(2026, 4, 30, 9), "s1", "We planned the garden beds and bought tomato seedlings."),
    ("e2", ms(2026, 4, 30, 9, 5), "s1", "The tomato seedlings need sun and water every morning."),
    ("e3", ms(2026, 5, 1, 18), "s2", "The quarterly budget review moved to Friday afternoon."),
    ("e4", ms(2026, 5, 4, 8), "s2", "Monday: the budget spreadsheet is due to finance."),
]


def built(order: list[int] | None = None) -> tuple[TocIndex, dict[str, Said]]:
    index = TocIndex("ada")
    said: dict[str, Said] = {}
    for i in order if order is not None else range(len(EPISODES)):
        node_id, time_ms, session, text = EPISODES[i]
        index.add(node_id, time_ms, session)
        said[node_id] = Said(text, time_ms)
    return index, said


def test_periods_nest_year_month_week_day_segment_and_split_weeks_at_month_ends() -> None:
    index, _ = built()
    assert index.roots() == ["2026"]
    assert sorted(index.periods["2026"].children) == ["2026-04", "2026-05"]
    assert sorted(index.periods["2026-04"].children) == ["2026-04/W18"]
    assert sorted(index.periods["2026-05"].children) == ["2026-05/W18", "2026-05/W19"]
    assert index.periods["2026-05/W18"].start_ms == ms(2026, 5, 1)  # the May part of ISO week 18
    assert index.periods["2026-04-30/s1"].episodes == {"e1", "e2"}
    assert index.count("2026") == 4 and index.count("2026-05") == 2
    assert index.periods["2026"].sessions == {"s1", "s2"}


@given(st.permutations(list(range(len(EPISODES)))))
def test_the_same_episodes_in_any_order_give_the_same_index(order: list[int]) -> None:
    assert built(order)[0].to_dict() == built()[0].to_dict()


def test_json_round_trip_and_changed_periods_are_handed_over_once() -> None:
    index, _ = built()
    again = TocIndex.from_dict(json.loads(json.dumps(index.to_dict())))
    assert again.to_dict() == index.to_dict()
    assert index.take_changed()[:2] == ["2026", "2026-04"]  # coarsest level first
    assert index.take_changed() == []
    index.add("e5", ms(2026, 5, 4, 9), "s2")
    assert index.take_changed() == ["2026", "2026-05", "2026-05/W19", "2026-05-04", "2026-05-04/s2"]


def idf_of(said: dict[str, Said]) -> Idf:
    return Idf.of(sentences_of((i, s.text, s.time_ms) for i, s in said.items()))


def test_toc_events_publish_each_changed_period_with_its_summary_and_contains_edges() -> None:
    index, said = built()
    idf = idf_of(said)
    events = toc_events(index, index.take_changed(), ms(2026, 5, 5), said=said, idf=idf, layer="USER", count=len)
    nodes = [n for e in events if (n := change_as(e, NodeUpserted)) is not None]
    assert {n["kind"] for n in nodes} == {TOC_KIND}
    day = next(n for n in nodes if n["properties"]["period"] == "2026-04-30")
    assert day["properties"]["episodes"] == "2" and "tomato" in day["text"]
    assert len(day["text"]) <= 400
    edges = [c for e in events if (c := change_as(e, EdgeUpserted)) is not None and c["edge_type"] == CONTAINS]
    assert {"e1", "e2"} <= {edge["dst"] for edge in edges}
    assert events == toc_events(built()[0], built()[0].take_changed(), ms(2026, 5, 5), said=said, idf=idf,
                                layer="USER", count=len)  # fmt: skip


def contains(events: list[MemoryEvent]) -> set[tuple[str, str]]:
    return {(c["src"], c["dst"]) for e in events if (c := change_as(e, EdgeUpserted)) is not None}


def test_a_later_publish_sends_only_the_edges_placed_since_and_together_they_make_the_whole_tree() -> None:
    index, said = built()
    idf = idf_of(said)
    first = contains(toc_events(index, index.take_changed(), 1, said=said, idf=idf, layer="USER", count=len))
    index.add("e5", ms(2026, 5, 4, 9), "s2")  # beside e4
    index.add("e6", ms(2026, 5, 5, 9), "s3")  # a new day, in e4's week
    later = contains(toc_events(index, index.take_changed(), 2, said=said, idf=idf, layer="USER", count=len))
    node = partial(toc_node_id, "ada")
    day, segment = node("2026-05-05"), node("2026-05-05/s3")
    assert later == {(node("2026-05-04/s2"), "e5"), (segment, "e6"), (day, segment), (node("2026-05/W19"), day)}
    whole = {(node(p.key), node(c)) for p in index.periods.values() for c in p.children}
    whole |= {(node(p.key), e) for p in index.periods.values() for e in p.episodes}
    assert first | later == whole and not first & later


NOW = ms(2026, 5, 6, 12)  # a Wednesday


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("what did we do yesterday?", TimeRange(ms(2026, 5, 5), ms(2026, 5, 6))),
        ("what happened last week?", TimeRange(ms(2026, 4, 27), ms(2026, 5, 4))),
        ("in April, what did I plant?", TimeRange(ms(2026, 4, 1), ms(2026, 5, 1))),
        ("on 30 April 2026", TimeRange(ms(2026, 4, 30), ms(2026, 5, 1))),
        ("in 2025", TimeRange(ms(2025, 1, 1), ms(2026, 1, 1))),
        ("before April", TimeRange(0, ms(2026, 4, 1))),
        ("what is my favourite colour?", None),
        ("on 31 February", None),
    ],
)
def test_time_anchors_are_read_relative_to_the_request_time(query: str, expected: TimeRange | None) -> None:
    assert time_anchor(query, NOW) == expected


def keywords(index: TocIndex, said: dict[str, Said]) -> dict[str, set[str]]:
    idf = idf_of(said)
    return {key: set(summary(index, key, said, idf)[1]) for key in index.periods}


def test_agentic_search_descends_by_summary_overlap_within_its_bounds() -> None:
    index, said = built()
    texts = {i: s.text for i, s in said.items()}
    result = toc_search(index, texts, keywords(index, said), "when is the budget spreadsheet due?", now_ms=NOW)
    assert result.episodes[0][0] == "e4" and result.anchor is None
    assert all(index.periods[k].level == "segment" for k in result.path)
    tight = toc_search(index, texts, keywords(index, said), "budget", now_ms=NOW, bounds=TocBounds(max_nodes_visited=2))
    assert tight.stopped == "max_nodes_visited" and len(tight.path) <= 2


def test_an_anchored_question_keeps_only_episodes_inside_the_range() -> None:
    index, said = built()
    texts = {i: s.text for i, s in said.items()}
    result = toc_search(index, texts, keywords(index, said), "what did I do in April?", now_ms=NOW)
    assert {n for n, _ in result.episodes} == {"e1", "e2"}


def test_engram_toc_prints_the_tree_and_searches_it_from_the_event_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    with EventLogSink(tmp_path) as sink:
        for offset, (node_id, time_ms, session, text) in enumerate(EPISODES):
            node = node_upserted(node_id, "event", "USER", time_ms, text=text, user_id="ada", session_id=session)
            ref: EventRef = {"topic": "engram.turns", "partition": 0, "offset": offset}
            value = codec.encode(memory_event("ada", time_ms, [ref], NODE_UPSERTED, node))
            sink.add(Record("engram.memory", 0, offset, time_ms, b"ada", value))
        sink.flush()
    assert cli_main(["toc", "--log", str(tmp_path), "--user", "ada", "--depth", "2", "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)
    [year] = printed["periods"]
    assert (year["period"], year["episodes"]) == ("2026", 4)
    assert [m["period"] for m in year["children"]] == ["2026-04", "2026-05"] and "children" not in year["children"][0]
    assert cli_main(["toc", "--log", str(tmp_path), "--user", "ada", "--search", "tomato seedlings", "--json"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert found["episodes"][0]["node_id"] in {"e1", "e2"}
    assert cli_main(["toc", "--log", str(tmp_path), "--user", "ada", "--search", "tomato seedlings"]) == 0
    first = capsys.readouterr().out.splitlines()[1].split()
    assert first[1] == found["episodes"][0]["node_id"], "each hit's node id is printed beside its text"
    assert " ".join(first[2:]) == found["episodes"][0]["text"][:110]
    assert cli_main(["toc", "--log", str(tmp_path), "--user", "ada", "--period", "1999"]) == 2


def test_a_coarse_periods_keywords_count_every_episode_under_it_and_a_new_episode_renews_them() -> None:
    """Summaries are built up the hierarchy from digests: a month's keywords rank the same term counts
    its episodes hold, and an episode placed under it renews every digest on its path."""
    index, said = built()
    idf = idf_of(said)
    month = [s for i in index.episodes_under("2026-05") for s in sentences_of([(i, said[i].text, 0)])]
    counts = Counter(t for s in month for t in s.terms)
    expected = sorted(counts, key=lambda t: (-counts[t] * idf.weight(t), t))[:6]
    text, words = summary(index, "2026-05", said, idf)
    assert words == expected and text.startswith("month 2026-05: 2 episodes, 1 sessions")
    index.add("e5", ms(2026, 5, 4, 9), "s2")
    said["e5"] = Said("Finance approved the budget spreadsheet and the quarterly budget.", ms(2026, 5, 4, 9))
    text, words = summary(index, "2026", said, idf_of(said))
    assert text.startswith("year 2026: 5 episodes") and "budget" in words


def test_removing_an_episode_leaves_the_index_its_other_episodes_build() -> None:
    index, _ = built()
    index.remove("e3", EPISODES[2][1], "s2")
    assert index.to_dict() | {"changed": []} == built([0, 1, 3])[0].to_dict() | {"changed": []}
    assert index.count("2026") == 3 and "2026-05-01" not in index.periods
