"""`engram trace back|why|concept` over MemoryEvents archived in an event log."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engram.processors.trace.builder import TraceBuilder, event_node_id
from engram.schemas.codec import AvroCodec
from engram.schemas.records import ConversationTurn, LoggedEvent, MemoryEvent
from engram.sinks.eventlog import SegmentWriter
from engram.streams.cli import main
from tests.trace.conftest import refs
from tests.trace.turns import ref, turn, upserted_edges


def archive(root: Path, events: list[MemoryEvent]) -> None:
    codec: AvroCodec[MemoryEvent] = AvroCodec("MemoryEvent")
    records: list[LoggedEvent] = [
        {
            "topic": "engram.memory",
            "partition": 0,
            "offset": i,
            "timestamp_ms": e["event_time_ms"],
            "key": e["key"].encode(),
            "value": codec.encode(e),
        }
        for i, e in enumerate(events)
    ]
    with SegmentWriter(root, "engram.memory", 0) as writer:
        writer.append(records)


@pytest.fixture
def logged(tmp_path: Path, locomo_turns: dict[str, list[ConversationTurn]]) -> tuple[Path, list[MemoryEvent]]:
    builder = TraceBuilder()
    events = builder.apply_batch(refs(locomo_turns["26"][:60]))
    chain = [
        turn(0, "why is the build red?", user="dev", turn_id="q"),
        turn(1, "the parser test fails", role="assistant", user="dev", turn_id="a"),
        turn(2, "fix it then", user="dev", turn_id="f", parents=["a"]),
    ]
    events += builder.apply_batch([(t, ref(100 + i)) for i, t in enumerate(chain)])
    archive(tmp_path, events)
    return tmp_path, events


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main([*argv, "--json"])
    result = json.loads(capsys.readouterr().out)
    assert isinstance(result, dict)
    return code, result


def test_back_lists_the_previous_turns(
    logged: tuple[Path, list[MemoryEvent]],
    capsys: pytest.CaptureFixture[str],
    locomo_turns: dict[str, list[ConversationTurn]],
) -> None:
    turns, log = locomo_turns["26"], str(logged[0])
    code, result = run_json(capsys, "trace", "back", "26:D1:10", "--user", "26", "--k", "3", "--log", log)
    assert code == 0 and result["undecodable"] == 0
    assert [r["text"] for r in result["results"]] == [turns[i]["content"] for i in (8, 7, 6)]
    assert [r["steps_back"] for r in result["results"]] == [1, 2, 3]
    assert result["results"][0]["sources"] == [{"topic": "engram.turns", "partition": 0, "offset": 8}]


def test_why_follows_causes(logged: tuple[Path, list[MemoryEvent]], capsys: pytest.CaptureFixture[str]) -> None:
    code, result = run_json(capsys, "trace", "why", "f", "--user", "dev", "--log", str(logged[0]))
    assert code == 0
    chain = [(r["node_id"], r["reason"], r["depth"]) for r in result["results"]]
    assert chain == [(event_node_id("dev", "a"), "explicit", 1), (event_node_id("dev", "q"), "answers", 2)]


def test_concept_lists_its_episodes(logged: tuple[Path, list[MemoryEvent]], capsys: pytest.CaptureFixture[str]) -> None:
    path, events = logged
    first = event_node_id("26", "26:D1:1")
    concept = next(e["dst"] for e in upserted_edges(events) if e["edge_type"] == "REF" and e["src"] == first)
    members = {e["src"] for e in upserted_edges(events) if e["edge_type"] == "REF" and e["dst"] == concept}
    code, result = run_json(capsys, "trace", "concept", concept, "--log", str(path))
    assert code == 0 and result["node"]["kind"] == "concept"
    assert {r["node_id"] for r in result["results"]} == members and first in members


def test_human_output_and_unknown_ids(
    logged: tuple[Path, list[MemoryEvent]], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["trace", "back", "26:D1:3", "--user", "26", "--k", "2", "--log", str(logged[0])]) == 0
    out = capsys.readouterr().out
    assert out.startswith("back ") and "  -1  " in out and "  -2  " in out
    assert main(["trace", "why", "no-such-node", "--log", str(logged[0])]) == 1
    assert "not in the log" in capsys.readouterr().out


def test_back_takes_what_people_see_a_source_offset_or_a_bare_turn_id(
    logged: tuple[Path, list[MemoryEvent]], capsys: pytest.CaptureFixture[str]
) -> None:
    log = str(logged[0])
    _, by_user = run_json(capsys, "trace", "back", "26:D1:10", "--user", "26", "--k", "3", "--log", log)
    source = "engram.turns/0/9"  # as a compiled context's provenance and a dead letter show it
    assert by_user["node"]["sources"] == [{"topic": "engram.turns", "partition": 0, "offset": 9}]
    for reference in (source, "26:D1:10", by_user["node"]["node_id"]):
        code, result = run_json(capsys, "trace", "back", reference, "--k", "3", "--log", log)
        assert code == 0 and result["results"] == by_user["results"], reference


def test_a_turn_id_several_users_have_is_named_not_guessed(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    builder = TraceBuilder()
    chain = [turn(0, "hello from dev", user="dev", turn_id="t"), turn(0, "hello from eve", user="eve", turn_id="t")]
    archive(tmp_path, builder.apply_batch([(t, ref(i)) for i, t in enumerate(chain)]))
    assert main(["trace", "back", "t", "--log", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "names 2 turns" in err and "hello from dev" in err and "hello from eve" in err
    assert main(["trace", "back", "t", "--user", "eve", "--log", str(tmp_path)]) == 0
