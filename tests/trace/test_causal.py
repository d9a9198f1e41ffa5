"""CAUSAL edges (explicit, tool call -> result, question -> answer) and why() over them."""

from __future__ import annotations

from engram.processors.trace.builder import TraceBuilder, event_node_id
from engram.processors.trace.emit import code_file_node_id
from engram.processors.trace.navigate import TraceIndex
from engram.schemas.records import CodeChange, MemoryEvent
from tests.trace.turns import ref, removed_edges, turn, upserted_edges, upserted_nodes


def causal_edges(events: list[MemoryEvent]) -> set[tuple[str, str, str]]:
    return {
        (e["src"], e["dst"], e["properties"]["reason"]) for e in upserted_edges(events) if e["edge_type"] == "CAUSAL"
    }


def nid(turn_id: str) -> str:
    return event_node_id("u1", turn_id)


def test_answers_tool_calls_and_explicit_parents() -> None:
    turns = [
        turn(0, "what is the weather in Paris?", turn_id="q"),
        turn(
            1,
            "let me check",
            role="assistant",
            turn_id="call",
            tool_calls=[{"call_id": "c1", "name": "weather", "arguments_json": "{}"}],
        ),
        turn(2, '{"temp": 21}', role="tool", turn_id="result", metadata={"tool_call_id": "c1"}),
        turn(3, "It is 21 degrees in Paris.", role="assistant", turn_id="answer", parents=["result"]),
    ]
    events = TraceBuilder().apply_batch([(t, ref(i)) for i, t in enumerate(turns)])
    assert causal_edges(events) == {
        (nid("q"), nid("call"), "answers"),
        (nid("call"), nid("result"), "tool-call"),
        (nid("result"), nid("answer"), "explicit"),
    }
    index = TraceIndex.from_events(events)
    assert [(a.node_id, a.depth) for a in index.why(nid("answer"))] == [
        (nid("result"), 1),
        (nid("call"), 2),
        (nid("q"), 3),
    ]
    assert index.why(nid("q")) == []


def test_a_tool_result_before_its_call_is_linked_when_the_call_arrives() -> None:
    builder = TraceBuilder()
    early = builder.apply(turn(2, "42", role="tool", turn_id="r", metadata={"tool_call_id": "c9"}), ref(0))
    assert causal_edges(early) == set()
    call = turn(
        1, "calling", role="assistant", turn_id="c", tool_calls=[{"call_id": "c9", "name": "f", "arguments_json": "{}"}]
    )
    assert (nid("c"), nid("r"), "tool-call") in causal_edges(builder.apply(call, ref(1)))


def test_a_late_question_becomes_the_cause_of_the_answers_after_it() -> None:
    builder = TraceBuilder()
    first = [turn(0, "hi", turn_id="q0"), turn(2, "sure, here it is", role="assistant", turn_id="a2")]
    events = builder.apply_batch([(t, ref(i)) for i, t in enumerate(first)])
    assert (nid("q0"), nid("a2"), "answers") in causal_edges(events)
    late = builder.apply(turn(1, "can you send the report?", turn_id="q1"), ref(5))
    assert {(r["edge_type"], r["src"], r["dst"]) for r in removed_edges(late)} == {
        ("NEXT", nid("q0"), nid("a2")),
        ("CAUSAL", nid("q0"), nid("a2")),
    }
    assert (nid("q1"), nid("a2"), "answers") in causal_edges(late)


def test_a_code_change_joins_the_dag_under_the_turns_that_caused_it() -> None:
    builder = TraceBuilder()
    builder.apply(turn(0, "please fix the parser", turn_id="ask"), ref(0))
    change: CodeChange = {
        "change_id": "ch1",
        "repo": "acme/app",
        "path": "src/parser.py",
        "language": "python",
        "commit": "abc123",
        "content": "def parse(x):\n    return x\n",
        "deleted": False,
        "event_time_ms": 1_700_000_100_000,
        "layer": "ORGANIZATION",
        "causal_parent_ids": ["ask"],
        "user_id": "u1",
        "session_id": "s1",
    }
    events = builder.apply_code_batch([(change, ref(0, "engram.code"))])
    node = upserted_nodes(events)[0]
    assert events[0]["key"] == "acme/app"
    assert (node["kind"], node["node_id"]) == ("code_file", code_file_node_id("acme/app", "src/parser.py"))
    assert causal_edges(events) == {(nid("ask"), code_file_node_id("acme/app", "src/parser.py"), "code-change")}
