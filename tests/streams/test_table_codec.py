"""The state tables' values go through Faust's JSON codec, which ``faust-streaming[orjson]`` backs
with orjson (6x the json module's speed on a 1 MB Trace state, issue 20): a Trace state and a dream
memory's records come back from it exactly as the json module reads them."""

from __future__ import annotations

import json
from typing import Any

import orjson
from faust.serializers import codecs

from engram.processors.dreaming.config import BALANCED
from engram.processors.dreaming.dream import Dreamer
from engram.schemas.record import Record
from engram.streams.agents.ingest import group_by_key
from engram.streams.dream_step import DreamStep
from engram.streams.steps import TraceStep
from tests.dreaming.test_consolidate import HIKES, said


def test_faust_encodes_table_values_with_orjson() -> None:
    value = {"turns": [[0, "n1", "u", "d"]], "evicted_up_to": None}
    found = codecs.get_codec("json").dumps(value)
    assert found == orjson.dumps(value), "faust-streaming[orjson] is missing: tables fall back to the json module"


def test_trace_and_dream_states_round_trip_through_the_tables_codec() -> None:
    codec = codecs.get_codec("json")
    events = said([HIKES, HIKES[::-1]])
    records = [Record("engram.memory", 0, i, 0, None, e) for i, e in enumerate(events)]
    dream = DreamStep(Dreamer(BALANCED))
    writes, _ = dream.process({}, group_by_key(dream, records))
    states: list[Any] = [w.state for w in writes]
    trace = TraceStep()
    turns = [Record("engram.turns", 0, i, 0, None, turn(i)) for i in range(20)]
    trace_writes, _ = trace.process({}, group_by_key(trace, turns))
    states += [w.state for w in trace_writes]
    assert len(states) >= 3
    for state in states:
        assert codec.loads(codec.dumps(state)) == json.loads(json.dumps(state))


def turn(i: int) -> dict[str, Any]:
    return {"turn_id": f"t{i}", "user_id": "ada", "agent_id": None, "flow_id": None, "session_id": f"s{i // 8}",
            "turn_index": i % 8, "role": "user" if i % 2 == 0 else "assistant", "content": HIKES[i % len(HIKES)],
            "event_time_ms": i * 60_000, "layer": "USER", "causal_parent_ids": [], "tool_calls": [],
            "metadata": {}}  # fmt: skip
