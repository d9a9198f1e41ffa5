"""People's edits as decisions (processors/facts/edits.py): built from the state, applied once."""

from __future__ import annotations

import pytest

from engram.processors.facts.edits import Editor, FactEditError, apply_edit, clear_facts, delete_fact, edit_fact
from engram.processors.facts.listing import FactQuery
from engram.processors.facts.model import StoredFact, UserFacts, fact_id
from engram.schemas.changes import change_as
from engram.schemas.records import FactDecided, MemoryEvent

EDITOR = Editor("user:ada", "moved", 2_000)


def fact(relation: str, value: str, category: str) -> StoredFact:
    return StoredFact(fact_id("ada", "user", "ada", "ada", relation, value), "user", "ada", "ada", relation, value,
                      value.lower(), category, "long_term", 0.8, 2, 100, 100, 100, ["t1"])  # fmt: skip


def facts() -> UserFacts:
    state = UserFacts("ada")
    for f in (fact("lives_in", "Lisbon", "location"), fact("speaks_language", "Go", "skill"),
              fact("speaks_language", "Python", "skill")):  # fmt: skip
        state.facts[f.fact_id] = f
    return state


def decided(event: MemoryEvent) -> FactDecided:
    change = change_as(event, FactDecided)
    assert change is not None
    return change


def test_an_edit_replaces_the_value_and_says_who_and_why() -> None:
    state = facts()
    old = next(f for f in state.facts.values() if f.relation == "lives_in")
    event = edit_fact(state, old.fact_id, " Berlin ", EDITOR)
    change = decided(event)
    assert (change["decision"], change["rule"], change["value"], change["supersedes"]) == (
        "replace", "user-edit", "Berlin", old.fact_id,
    )  # fmt: skip
    assert change["reason"] == "edited by user:ada: moved" and event["key"] == "ada"
    for _ in range(2):  # applied twice (a redelivery): the same state
        assert apply_edit(state, change)
        assert {(f.relation, f.value) for f in state.facts.values()} == {
            ("lives_in", "Berlin"), ("speaks_language", "Go"), ("speaks_language", "Python"),
        }  # fmt: skip
    assert state.facts[change["fact_id"]].source_event_ids == ["t1"]


def test_delete_and_clear_retract_and_refuse_what_is_not_there() -> None:
    state = facts()
    cleared = [decided(e) for e in clear_facts(state, FactQuery(category="skill"), EDITOR)]
    assert sorted(c["value"] for c in cleared) == ["Go", "Python"]
    assert all(c["decision"] == "retract" and c["rule"] == "user-delete" for c in cleared)
    for change in cleared:
        apply_edit(state, change)
    assert [f.relation for f in state.facts.values()] == ["lives_in"]
    with pytest.raises(FactEditError, match="no active fact"):
        delete_fact(state, cleared[0]["fact_id"], EDITOR)
    with pytest.raises(FactEditError, match="characters"):
        edit_fact(state, next(iter(state.facts)), "  ", EDITOR)


def test_the_rules_own_decisions_are_not_edits() -> None:
    state = facts()
    own = decided(delete_fact(state, next(iter(state.facts)), EDITOR)) | {"rule": "cardinality-replace"}
    assert not apply_edit(state, own) and len(state.facts) == 3
