"""Erasure in every in-process projection: a `SubjectErased` MemoryEvent removes the user's nodes,
facts, dreams and cached buffers, keeps code, and leaves every other user's memory as it was."""

from __future__ import annotations

import numpy as np

from engram.processors.dreaming.schedule import DreamSchedule
from engram.processors.graph.engine import GraphEngine
from engram.processors.rebac import Viewer
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb.config import SlbConfig
from engram.processors.slb.table import LookasideTable
from engram.processors.trust.erasure import erased_by
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import LAYERS, NODE_UPSERTED, SUBJECT_ERASED, EventRef, MemoryEvent, SubjectErased
from engram.streams.steps import FactsStep, derive_turns, facts_state
from tests.streams.test_commit_flow import MEMORY, SAID, T0, TURNS, turn

REF: EventRef = {"topic": "engram.erasures", "partition": 0, "offset": 7}


def erased(user: str) -> MemoryEvent:
    change: SubjectErased = {"user_id": user, "reason": "test", "requested_by": None}
    return memory_event(user, T0 + 3_600_000, [REF], SUBJECT_ERASED, change)


def memory() -> list[MemoryEvent]:
    """Ada's and Bo's turns as the Trace and facts steps derive them, and a code node Ada wrote."""
    turns = [Record(TURNS, 0, i * 2 + p, 0, None, turn(u, i, SAID[u][i])) for i in range(4) for p, u in enumerate(SAID)]
    derived, _ = derive_turns(turns, MEMORY)
    code = node_upserted("code-1", "code_function", "ORGANIZATION", T0, text="def pay(): ...", user_id="ada")
    return [*derived, memory_event("acme/pay", T0, [REF], NODE_UPSERTED, code)]


def test_the_rule_keeps_code_and_other_users() -> None:
    assert erased_by("event", "ada", "ada") and erased_by("fact", "ada", "ada") and erased_by("gist", "ada", "ada")
    assert not erased_by("code_function", "ada", "ada")
    assert not erased_by("event", "bo", "ada") and not erased_by("event", None, "ada")


def test_the_view_forgets_the_user_and_nothing_else() -> None:
    events = memory()
    whole, alone = MemoryView(), MemoryView()
    whole.apply(events)
    assert {r.kind for r in whole.records() if r.user_id == "ada"} >= {"event", "fact", "code_function"}
    whole.apply([erased("ada")])
    alone.apply([e for e in events if e["key"] != "ada"])
    assert not [r for r in whole.records() if r.user_id == "ada" and not r.kind.startswith("code_")]
    assert whole.node("code-1") is not None
    bo = sorted((r.node_id, r.text) for r in whole.records() if r.user_id == "bo")
    assert bo and bo == sorted((r.node_id, r.text) for r in alone.records() if r.user_id == "bo")
    assert whole.text_search("Meta payments dog sushi", 10, Viewer("ada"), LAYERS) == []
    query = "Lisbon Paris hiking"
    assert whole.text_search(query, 10, Viewer("bo"), LAYERS) == alone.text_search(query, 10, Viewer("bo"), LAYERS)


def test_the_graph_engine_forgets_the_content_not_only_the_rows() -> None:
    engine = GraphEngine()
    engine.apply([*memory(), erased("ada")])
    store = engine.store
    code = store.users["ada"]
    rows = [r for r in range(len(store)) if int(store.owner.values[r]) == code and store.kinds[r] != "code_function"]
    assert rows and not any(store.alive[r] for r in rows)
    assert all(store.texts[r] == "" and r not in store.records for r in rows)
    assert not store.vectors.take(np.array(rows, dtype=np.intp), len(store))[1].any()
    assert store.alive[store.index["code-1"]]
    bo = store.users["bo"]
    assert any(store.alive[r] and store.texts[r] for r in range(len(store)) if int(store.owner.values[r]) == bo)


def test_the_facts_step_forgets_every_fact_and_keeps_its_offsets() -> None:
    records = [Record(MEMORY, 0, i, 0, b"ada", e) for i, e in enumerate(memory()) if e["key"] == "ada"]
    step = FactsStep()
    [write, *_] = step.process({}, {"ada": records})[0]
    assert write.state is not None and facts_state(write.state, "ada")[0].facts
    writes, events = step.process({"ada": write.state}, {"ada": [Record(MEMORY, 0, 99, 0, b"ada", erased("ada"))]})
    forgot = next(w for w in writes if w.key == "ada")
    assert events == [] and forgot.state is not None
    clock = next(w.state for w in writes if w.key != "ada")  # the partition's prune clock forgets ada too
    assert clock is not None and "ada" not in clock["users"]
    facts, applied = facts_state(forgot.state, "ada")
    assert not facts.facts and applied == facts_state(write.state, "ada")[1]


def test_cached_buffers_and_pending_dreams_go() -> None:
    table = LookasideTable(SlbConfig())
    for user, session in (("ada", "s1"), ("ada", "s2"), ("ad", "a|s1"), ("bo", "s1")):
        table.buffer(Viewer(user), session, ["USER"], 8).insert(np.ones(8, dtype=np.float32), [], [], None, 0)
    table.note_memory_events("ada", 3)
    assert len(table.forget_user("ada")) == 2
    assert len(table.buffers) == 2 and table.epoch("ada") == 0
    schedule = DreamSchedule()
    schedule.note_turn("ada", "s1", T0)
    schedule.note_turn("bo", "s1", T0)
    schedule.forget("ada")
    assert [d.user_id for d in schedule.advance(T0 + 10 * 86_400_000)] == ["bo", "bo"]
