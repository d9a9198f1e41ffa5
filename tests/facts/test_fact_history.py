"""A fact's history from the decision log (processors/fact_history.py): the facts page and
`engram mcp` show what a fact replaced, when it was stated and its source turns' texts."""

from __future__ import annotations

from engram.processors.fact_history import FactLog, histories, source_turns
from engram.processors.facts.edits import Editor, apply_edit, edit_fact
from engram.processors.facts.model import CandidateFact, UserFacts
from engram.processors.facts.reconciler import FactReconciler
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event
from engram.schemas.records import NODE_UPSERTED, FactDecided, MemoryEvent, NodeUpserted

DAY = 86_400_000


def turn_node(user: str, turn_id: str, text: str, time_ms: int) -> MemoryEvent:
    node: NodeUpserted = {
        "node_id": f"n-{turn_id}", "kind": "event", "layer": "USER", "user_id": user, "agent_id": None,
        "flow_id": None, "session_id": "s1", "text": text, "tokens": 5, "event_time_ms": time_ms, "embedding": None,
        "properties": {"turn_id": turn_id, "role": "user"},
    }  # fmt: skip
    return memory_event(user, time_ms, [], NODE_UPSERTED, node)


def said(
    reconciler: FactReconciler, state: UserFacts, turn_id: str, relation: str, value: str, day: int
) -> list[MemoryEvent]:
    """The turn's node and the rules' decisions on what it says."""
    time_ms = day * DAY
    candidate = CandidateFact("user", relation, value, 0.9, "user", "ada", (turn_id,))
    decided = reconciler.reconcile(state, [candidate], event_time_ms=time_ms)
    return [turn_node("ada", turn_id, f"I {relation} {value}.", time_ms), *decided]


def active(state: UserFacts, relation: str) -> str:
    return next(f.fact_id for f in state.facts.values() if f.relation == relation)


def test_a_replaced_value_its_replacement_and_the_source_turns_are_read_back() -> None:
    reconciler, state = FactReconciler(), UserFacts("ada")
    log = [
        *said(reconciler, state, "t1", "works_at", "Meta", 1),
        *said(reconciler, state, "t2", "works_at", "Google", 5),
    ]
    google = active(state, "works_at")
    assert state.facts[google].corrects
    folded = FactLog.of("ada", [*log, turn_node("bob", "t9", "not hers", DAY)])
    history = folded.history(google)
    assert [d["decision"] for d in history["decisions"]] == ["replace"]
    [meta] = history["replaced"]
    assert (meta["value"], meta["valid_from_ms"], meta["source_event_ids"]) == ("Meta", DAY, ["t1"])
    assert (meta["replaced_at_ms"], meta["replaced_by_rule"]) == (5 * DAY, "replace-single-valued")  # the retraction
    assert meta["replaced_reason"] == "works_at 'meta' is superseded by 'google' (single-valued: latest wins)"
    answer = histories(folded, [google, "unknown-fact"])
    assert answer["turns"] == {
        "t1": {"text": "I works_at Meta.", "time_ms": DAY, "session_id": "s1"},
        "t2": {"text": "I works_at Google.", "time_ms": 5 * DAY, "session_id": "s1"},
    }
    assert answer["facts"]["unknown-fact"] == {"decisions": [], "replaced": []}
    assert source_turns([f.to_dict() for f in state.facts.values()]) == ["t2"]


def test_a_value_that_comes_back_is_a_chain_in_log_order_not_a_loop() -> None:
    """Lisbon, then Berlin (the rules), then a person edits it back to Lisbon: one fact id twice."""
    reconciler, state = FactReconciler(), UserFacts("ada")
    log = [
        *said(reconciler, state, "t1", "lives_in", "Lisbon", 1),
        *said(reconciler, state, "t2", "lives_in", "Berlin", 3),
    ]
    edit = edit_fact(state, active(state, "lives_in"), "Lisbon", Editor("user:ada", "moved back", 9 * DAY))
    change = change_as(edit, FactDecided)
    assert change is not None and apply_edit(state, change)
    lisbon = active(state, "lives_in")
    history = FactLog.of("ada", [*log, edit]).history(lisbon)
    assert [(v["value"], v["replaced_by_rule"]) for v in history["replaced"]] == [
        ("Berlin", "user-edit"), ("Lisbon", "replace-single-valued"),
    ]  # fmt: skip
    assert history["replaced"][0]["replaced_reason"] == "edited by user:ada: moved back"
    assert [d["decision"] for d in history["decisions"]] == ["store", "retract", "replace"]
