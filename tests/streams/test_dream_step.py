"""The memory agent's dream step in process (streams/dream_step.py): dreams fire on event time, a
replay dreams byte-identical dreams whatever the batching or restarts, dreaming's own events coming
back are skipped, and a re-awakening from the compile path gets its timeline edges back."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from engram.processors.dreaming import chunks, made
from engram.processors.dreaming import rows as dream_rows
from engram.processors.dreaming.config import BALANCED, DAY_MS
from engram.processors.dreaming.dream import Dreamer
from engram.processors.dreaming.memory import UserMemory
from engram.processors.dreaming.records import (
    CITE_PREFIX,
    CONCEPT_PREFIX,
    DREAMS,
    ECHOED_PREFIX,
    MADE_PREFIX,
    PENDING_PREFIX,
    VERSION,
    held,
    read_memory,
)
from engram.processors.dreaming.report import DreamReport
from engram.processors.parts import part_key
from engram.schemas.changes import change_as
from engram.schemas.events import memory_event, node_reawakened
from engram.schemas.record import Record
from engram.schemas.records import (
    EDGE_UPSERTED,
    FACT_DECIDED,
    NODE_REAWAKENED,
    NODE_UPSERTED,
    SUBJECT_ERASED,
    EdgeUpserted,
    EventRef,
    MemoryEvent,
    NodeDormant,
    NodeUpserted,
    RuleCommitted,
    SubjectErased,
)
from engram.streams.agents.ingest import group_by_key
from engram.streams.agents.stores import with_upstream
from engram.streams.dream_step import SCHEDULE_PREFIX, UPSTREAM, DreamStep
from engram.streams.steps import derive_turns
from tests.e2e.test_dreaming_e2e import DETAIL, conversation

CONFIG = replace(BALANCED, decay_ms=DAY_MS)
MEMORY = "engram.memory"


def read(states: dict[str, Any]) -> UserMemory:
    memory = read_memory("dana", states)
    assert memory is not None
    return memory


def without_offsets(states: dict[str, Any]) -> dict[str, Any]:
    """The memories and schedules held, less the engram.memory offsets they have seen."""
    return {key: {k: v for k, v in state.items() if k != "applied"} for key, state in held(states).items()}


def memory_stream() -> list[Record[MemoryEvent]]:
    """Dana's four sessions and Eve's later turn as engram.memory holds them (each turn's facts
    right after its Trace events, one partition)."""
    turns = [Record("engram.turns", 0, i, 0, None, t) for i, t in enumerate(conversation())]
    derived, _ = derive_turns(turns, MEMORY)
    ordered = sorted(derived, key=lambda e: e["sources"][0]["offset"] if e["sources"] else 0)
    return [Record(MEMORY, 0, i, 0, None, e) for i, e in enumerate(ordered)]


def run(
    records: list[Record[MemoryEvent]],
    batch: int = 10_000,
    states: dict[str, Any] | None = None,
    *,
    restart: bool = False,
) -> tuple[list[MemoryEvent], dict[str, Any], list[DreamReport]]:
    reports: list[DreamReport] = []
    states = {} if states is None else states
    events: list[MemoryEvent] = []
    step = DreamStep(Dreamer(CONFIG, on_report=reports.append))
    for start in range(0, len(records), batch):
        if restart:  # a new worker each batch: state only from the table's JSON
            states = json.loads(json.dumps(states))
            step = DreamStep(Dreamer(CONFIG, on_report=reports.append))
        writes, out = step.process(states, group_by_key(step, records[start : start + batch]))
        states.update({w.key: w.state for w in writes})
        events.extend(out)
    return events, states, reports


def test_an_idle_session_dreams_on_event_time_and_the_dream_commits_and_forgets() -> None:
    events, states, reports = run(memory_stream(), batch=1000)
    triggers = {(r.user_id, r.trigger) for r in reports}
    assert ("dana", "idle") in triggers and ("dana", "window") in triggers
    assert all(r.at_ms <= 1_767_225_600_000 + 12 * DAY_MS for r in reports)
    rules = [r["text"] for e in events if (r := change_as(e, RuleCommitted)) is not None]
    assert rules == ["user likes hiking regularly (4 sessions)"]
    memory = read(states)
    dormant = {d["node_id"] for e in events if (d := change_as(e, NodeDormant)) is not None}
    detail = next(e.node_id for e in memory.graph.episodes.values() if e.text == DETAIL)
    assert detail in dormant and memory.graph.episodes[detail].dormant
    assert f"{SCHEDULE_PREFIX}0" in states
    assert all(e["key"] == "dana" for e in events)  # Eve's one turn has nothing to dream about yet


def test_replays_dream_identical_events_whatever_the_batching_and_restarts() -> None:
    records = memory_stream()
    whole, _, _ = run(records, batch=len(records))
    assert whole
    assert run(records, batch=7)[0] == whole
    assert run(records, batch=5, restart=True)[0] == whole
    assert run(records, batch=len(records))[0] == whole


def test_a_batch_applied_again_after_its_state_was_written_dreams_nothing_more() -> None:
    """A crash after the state write and before the offset commit: the batch comes again to the
    memory that already holds it. Its turns are not noted again, so no session dreams twice."""
    records = memory_stream()
    cut = len(records) * 2 // 3
    first, states, _ = run(records[:cut], batch=cut)
    redelivered = records[cut - 40 : cut]
    again, after, _ = run(redelivered, batch=len(redelivered), states=json.loads(json.dumps(states)))
    assert again == []
    assert after == json.loads(json.dumps(states))
    rest, _, _ = run(records[cut:], batch=len(records), states=after)
    assert first + rest == run(records, batch=len(records))[0]


def test_a_turn_derived_again_after_a_crash_and_delivered_after_its_dream_dreams_nothing_more() -> None:
    """The ingest worker died after delivering a turn's events and before writing its Trace state:
    the turn is derived again, and its second copy reaches engram.memory after the turn's session
    was dreamt. The copy must not schedule the session again (a catch-up dream the clean run never
    dreams) nor change the memory."""
    records = memory_stream()
    clean, clean_states, _ = run(records, batch=len(records))
    first_turn = [r.value for r in records if r.value["sources"] and r.value["sources"][0]["offset"] == 0]
    first_turn = [e for e in first_turn if e["change"][0] != FACT_DECIDED]  # the Trace's, not the facts step's
    assert {e["change"][0] for e in first_turn} == {NODE_UPSERTED, EDGE_UPSERTED}
    cut = len(records) * 2 // 3
    assert clean[0]["event_time_ms"] <= records[cut - 1].value["event_time_ms"]  # dreamt before the copy
    copies = [*(r.value for r in records[:cut]), *first_turn, *(r.value for r in records[cut:])]
    again, states, _ = run([Record(MEMORY, 0, i, 0, None, e) for i, e in enumerate(copies)], batch=13)
    assert again == clean
    assert without_offsets(states) == without_offsets(clean_states)


def test_a_batch_whose_state_was_written_in_part_comes_again_and_ends_as_a_clean_run() -> None:
    """A crash in the middle of a batch's state writes: the users' records were written, the
    partition's schedule was not. The batch comes again; each record skips what it holds."""
    records = memory_stream()
    cut = len(records) // 2
    _, before, _ = run(records[: cut - 30])
    _, after, _ = run(records[cut - 30 : cut], states=json.loads(json.dumps(before)))
    torn = {k: v for k, v in after.items() if not k.startswith(SCHEDULE_PREFIX)}
    torn |= {k: v for k, v in before.items() if k.startswith(SCHEDULE_PREFIX)}
    _, mended, _ = run(records[cut - 30 :], states=json.loads(json.dumps(torn)))
    _, clean, _ = run(records)
    assert held(mended) == held(json.loads(json.dumps(clean)))


def test_dreamings_own_events_coming_back_change_nothing() -> None:
    records = memory_stream()
    events, states, _ = run(records, batch=len(records))
    echoes = [Record(MEMORY, 0, len(records) + i, 0, None, e) for i, e in enumerate(events)]
    again, after, _ = run(echoes, batch=50, states=json.loads(json.dumps(states)))
    assert again == []
    assert read(after).graph.to_dict() == read(states).graph.to_dict()
    assert not read(after).pending


def test_a_second_copy_of_an_echo_after_a_later_dream_changes_nothing() -> None:
    """A dream's events reach the topic twice (a worker died after producing them and before writing
    its state, and dreamt again). The second copy comes back after a later dream rewrote a gist:
    it must not bring the old text back."""
    records = memory_stream()
    events, states, _ = run(records, batch=len(records))
    first_dream = [e for e in events if e["event_time_ms"] == events[0]["event_time_ms"]]
    texts = {n["node_id"]: n["text"] for e in events if (n := change_as(e, NodeUpserted)) is not None}
    assert any(n["text"] != texts[n["node_id"]] for e in first_dream if (n := change_as(e, NodeUpserted)) is not None)
    copies = [*events, *first_dream]
    echoes = [Record(MEMORY, 0, len(records) + i, 0, None, e) for i, e in enumerate(copies)]
    again, after, _ = run(echoes, batch=50, states=json.loads(json.dumps(states)))
    assert again == []
    assert read(after).graph.to_dict() == read(states).graph.to_dict()


def test_a_reawakening_from_the_compile_path_gets_its_timeline_back() -> None:
    records = memory_stream()
    events, states, _ = run(records, batch=len(records))
    memory = read(states)
    detail = next(e for e in memory.graph.episodes.values() if e.text == DETAIL)
    ref: EventRef = {"topic": "engram.context.requests", "partition": 0, "offset": 3}
    at_ms = detail.time_ms + 20 * DAY_MS
    woke = memory_event("dana", at_ms, [ref], NODE_REAWAKENED, node_reawakened(detail.node_id, "q"))
    echoes = [Record(MEMORY, 0, len(records) + i, 0, None, e) for i, e in enumerate(events)]
    out, after, _ = run([*echoes, Record(MEMORY, 0, len(records) + len(echoes), 0, None, woke)], 1000, dict(states))
    graph = read(after).graph
    assert not graph.episodes[detail.node_id].dormant
    added = {(c["src"], c["dst"]) for e in out if (c := change_as(e, EdgeUpserted)) is not None}
    assert added <= graph.next_edges
    assert not any((s, d) in graph.contracted for s, d in graph.next_edges if detail.node_id in (s, d))


def test_the_facts_steps_decisions_reach_the_dream_step_in_place_and_their_echo_is_skipped() -> None:
    """In a worker the facts of a turn reach engram.memory a batch after its Trace events: the memory
    agent hands them to the dream step right after their turn (``with_upstream``), so a dream fired
    by a later record of the same batch sees them, and they are not applied twice."""
    records = memory_stream()
    trace = [r for r in records if r.value["change"][0] != "engram.FactDecided"]
    decided = [r.value for r in records if r.value["change"][0] == "engram.FactDecided"]
    placed = with_upstream(trace, decided)
    upstream = [r.value for r in placed if r.topic == UPSTREAM]
    assert sorted(e["event_id"] for e in upstream) == sorted(e["event_id"] for e in decided)
    for i, record in enumerate(placed):
        if record.topic == UPSTREAM and record.value["sources"]:
            source = record.value["sources"][0]["offset"]
            before = next(r for r in reversed(placed[:i]) if r.topic != UPSTREAM)
            assert before.value["sources"][0]["offset"] == source
    events, states, _ = run(placed, batch=len(placed))
    assert [e["change"][0] for e in events].count("engram.RuleCommitted") == 1
    echoes = [Record(MEMORY, 0, 10_000 + i, 0, None, e) for i, e in enumerate(decided)]
    assert run(echoes, 100, json.loads(json.dumps(states)))[0] == []
    after = read(run(echoes, 100, json.loads(json.dumps(states)))[1])
    assert set(after.pending) == {e["event_id"] for e in events}  # only the dreams' own, still on their way


def test_a_worker_that_gets_a_user_back_reads_what_the_other_worker_wrote() -> None:
    """Worker A keeps the memories it wrote; the partition moves to B, then back to A. A's memory in
    hand is stale, and it must go on from the record B left in the table."""
    records = memory_stream()
    a = DreamStep(Dreamer(CONFIG))
    b = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    events: list[MemoryEvent] = []
    third = len(records) // 3
    for step, batch in ((a, records[:third]), (b, records[third : 2 * third]), (a, records[2 * third :])):
        writes, out = step.process(table, group_by_key(step, batch))
        table.update({w.key: w.state for w in writes})
        events.extend(out)
    whole, clean, _ = run(records, batch=len(records))
    assert events == whole and held(json.loads(json.dumps(table))) == held(json.loads(json.dumps(clean)))


def test_a_batch_that_fails_leaves_no_half_applied_memory_behind(monkeypatch: Any) -> None:
    """A batch raises halfway (its memories were changed in place): the step must not go on from
    them, because the table still holds the records of before the batch."""
    records = memory_stream()
    half = len(records) // 2
    step = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    writes, events = step.process(table, group_by_key(step, records[:half]))
    table.update({w.key: w.state for w in writes})
    folds = 0
    real_fold = UserMemory.fold

    def failing_fold(memory: UserMemory, event: MemoryEvent) -> bool:
        nonlocal folds
        folds += 1
        if folds == 20:
            msg = "crash mid-batch"
            raise RuntimeError(msg)
        return real_fold(memory, event)

    monkeypatch.setattr(UserMemory, "fold", failing_fold)
    with pytest.raises(RuntimeError, match="crash mid-batch"):
        step.process(table, group_by_key(step, records[half:]))
    assert folds == 20
    monkeypatch.setattr(UserMemory, "fold", real_fold)
    writes, rest = step.process(table, group_by_key(step, records[half:]))
    table.update({w.key: w.state for w in writes})
    assert events + rest == run(records, batch=len(records))[0]


def test_a_batch_writes_only_the_parts_it_changed_in_their_free_slots_then_the_head(monkeypatch: Any) -> None:
    """The memory lives in parts (processors/dreaming/records.py): a batch of new turns rewrites the
    chunk they arrive in and the head, not the chunks of older history; each part goes to its free
    slot before the head names it, and the slot it left is deleted after, once the part has
    stopped changing (until then its next write overwrites it: processors/parts.py)."""
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    records = memory_stream()
    step = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    written: list[list[tuple[str, bool]]] = []
    for start in range(0, len(records), 6):
        writes, _ = step.process(table, group_by_key(step, records[start : start + 6]))
        for w in writes:
            if w.state is None:
                table.pop(w.key, None)
            else:
                table[w.key] = w.state
        written.append([(w.key, w.state is None) for w in writes if w.key.startswith("dana")])
    parts, stale = table["dana"]["parts"], set(table["dana"]["stale"])
    assert len(parts) >= 5 and {part_key("dana", p, s) for p, s in parts.items()} <= table.keys()
    older = {k for p, s in parts.items() if (k := part_key("dana", p, 1 - s)) in table}
    assert older == {part_key("dana", p, 1 - parts[p]) for p in stale}  # a second copy only of a stale part
    for keys in (k for k in written if k):
        head = keys.index(("dana", False))
        assert all(not gone for _, gone in keys[:head]) and all(gone for _, gone in keys[head + 1 :])
    turns_only = [keys for keys in written if keys and not any(f"\x00{MADE_PREFIX}" in k for k, _ in keys)]
    chunk_writes = [sum(not gone and k != "dana" for k, gone in keys) for keys in turns_only]
    assert turns_only and max(chunk_writes) <= 3  # the chunks new turns reach, never the whole history
    assert not any(k.startswith(part_key("dana", "c0", 0)[:-1]) for k, _ in turns_only[-1])  # old history stays
    in_hand = step.cache.take("dana", table["dana"])
    assert in_hand is not None
    again = read(json.loads(json.dumps(table)))
    assert again.graph.to_dict() == in_hand.graph.to_dict() and again.toc.to_dict() == in_hand.toc.to_dict()


def test_restarts_that_read_the_memory_from_its_parts_dream_what_a_clean_run_dreams(monkeypatch: Any) -> None:
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    records = memory_stream()
    whole, clean, _ = run(records, batch=len(records))
    events, states, _ = run(records, batch=5, restart=True)
    assert events == whole
    assert held(states) == held(clean)


def test_a_whole_record_of_before_the_parts_is_read_and_written_back_in_parts() -> None:
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut])
    older = {k: v for k, v in states.items() if not k.startswith("dana\x00")}
    older["dana"] = read(states).to_dict()  # the one-record form of before
    rest, after, _ = run(records[cut:], states=json.loads(json.dumps(older)))
    assert first + rest == run(records)[0]
    assert after["dana"]["v"] == VERSION and part_key("dana", "c0", 0) in after
    assert read(after).graph.to_dict() == read(run(records)[1]).graph.to_dict()


def popped(old: dict[str, Any], user: str, prefix: str) -> list[dict[str, Any]]:
    """The records of the user's parts named ``<prefix><number>``, in order, taken out of ``old``."""
    parts = old[user]["parts"]
    chunks = sorted((p for p in parts if p.startswith(prefix)), key=lambda p: int(p[1:]))
    return [old.pop(part_key(user, p, parts.pop(p))) for p in chunks]


def as_version_6(states: dict[str, Any], user: str) -> dict[str, Any]:
    """The states as version 6 wrote them: the concepts in the head."""
    old: dict[str, Any] = json.loads(json.dumps(states))
    head = old[user]
    head["graph"]["concepts"] = [row for chunk in popped(old, user, CONCEPT_PREFIX) for row in chunk["concepts"]]
    del head["concept_arrivals"]
    head["v"] = 6
    return old


def as_version_5(states: dict[str, Any], user: str) -> dict[str, Any]:
    """The states as version 5 wrote them: the ids of the echoes waited for and seen in the head."""
    old = as_version_6(states, user)
    head = old[user]
    for prefix, name in ((PENDING_PREFIX, "pending"), (ECHOED_PREFIX, "echoed")):
        head[name] = [i for chunk in popped(old, user, prefix) for i in chunk["ids"]]
    head["pending"] = sorted(head["pending"])
    del head["pending_arrivals"], head["echo_arrivals"]
    head["v"] = 5
    return old


def as_version_4(states: dict[str, Any], user: str) -> dict[str, Any]:
    """The states as version 4 wrote them: each node dreaming made with its citations in its row."""
    old = as_version_5(states, user)
    head = old[user]
    cites: dict[str, list[str]] = {}
    for chunk in popped(old, user, CITE_PREFIX):
        for node_id, cited in chunk["cites"]:
            cites.setdefault(node_id, []).extend(cited)
    for part in [p for p in head["parts"] if p.startswith(MADE_PREFIX)]:
        for row in old[part_key(user, part, head["parts"][part])]["consolidated"]:
            row[3] = sorted(cites.pop(row[0], []))
    assert not cites  # every citation's node has its row
    del head["cite_arrivals"]
    head["v"] = 4
    return old


def as_version_3(states: dict[str, Any], user: str) -> dict[str, Any]:
    """The states as version 3 wrote them: all dreaming made in one part (``DREAMS``), whole."""
    old = as_version_4(states, user)
    head = old[user]
    chunks = popped(old, user, MADE_PREFIX)
    whole: dict[str, Any] = {"consolidated": [], "rejected": {}, "contracted": []}
    for chunk in chunks:
        whole["consolidated"] += chunk["consolidated"]
        whole["rejected"] |= chunk["rejected"]
        whole["contracted"] = sorted(whole["contracted"] + chunk["contracted"])
    if chunks:
        old[part_key(user, DREAMS, 1)], head["parts"][DREAMS] = whole, 1
    del head["made_arrivals"]
    head["v"] = 3
    return old


def as_version_2(states: dict[str, Any], user: str) -> dict[str, Any]:
    """The states as version 2 wrote them: chunks named by their bare number."""
    v3 = as_version_3(states, user)
    old = {k.replace(f"{user}\x00c", f"{user}\x00"): v for k, v in v3.items()}
    old[user] |= {"v": 2, "parts": {p.removeprefix("c"): slot for p, slot in old[user]["parts"].items()}}
    return old


def test_a_memory_of_version_3_is_written_anew_with_what_dreaming_made_in_chunks(monkeypatch: Any) -> None:
    """Version 3 kept all dreaming made in one part, rewritten whole on each dream: the next write
    puts it in chunks (made.py), and deletes the old part after the new head."""
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    monkeypatch.setattr(made, "MADE_CHUNK", 2)
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut], batch=6)
    older = as_version_3(states, "dana")
    assert DREAMS in older["dana"]["parts"]
    step = DreamStep(Dreamer(CONFIG))
    writes, _ = step.process(older, group_by_key(step, records[cut : cut + 6]))
    danas = [w.key for w in writes if w.key.startswith("dana")]
    head_at = danas.index("dana")
    assert part_key("dana", DREAMS, 1) in danas[head_at + 1 :]  # deleted after the head names the chunks
    head = next(w.state for w in writes if w.key == "dana")
    assert head is not None
    chunks = {part_key("dana", p, slot) for p, slot in head["parts"].items() if p.startswith(MADE_PREFIX)}
    assert chunks and chunks == {k for k in danas[:head_at] if f"\x00{MADE_PREFIX}" in k}  # all of them, first
    rest, after, _ = run(records[cut:], states=older, batch=6)
    whole, clean, _ = run(records, batch=6)
    assert first + rest == whole
    assert after["dana"]["v"] == VERSION and DREAMS not in after["dana"]["parts"]
    assert after.get(part_key("dana", DREAMS, 1)) is None
    assert held(after) == held(clean)


def test_a_dream_writes_the_chunks_of_what_it_made_not_all_dreaming_ever_made(monkeypatch: Any) -> None:
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    monkeypatch.setattr(made, "MADE_CHUNK", 2)
    records = memory_stream()
    step = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    made_writes: list[int] = []
    for start in range(0, len(records), 6):
        writes, _ = step.process(table, group_by_key(step, records[start : start + 6]))
        made_writes.append(len([w for w in writes if w.state is not None and f"\x00{MADE_PREFIX}" in w.key]))
        for w in writes:
            if w.state is None:
                table.pop(w.key, None)
            else:
                table[w.key] = w.state
    chunks = [p for p in table["dana"]["parts"] if p.startswith(MADE_PREFIX)]
    assert len(chunks) >= 3 and max(made_writes) < len(chunks)
    assert held(table) == held(run(records, batch=len(records))[1])


def table_after(step: DreamStep, table: dict[str, Any], records: list[Record[MemoryEvent]]) -> list[str]:
    """Process ``records`` as one batch into ``table``; the keys of the parts it wrote."""
    writes, _ = step.process(table, group_by_key(step, records))
    for w in writes:
        if w.state is None:
            table.pop(w.key, None)
        else:
            table[w.key] = w.state
    return [w.key for w in writes if w.state is not None]


def test_a_dream_writes_the_chunks_of_the_citations_it_added_not_every_citation_again(monkeypatch: Any) -> None:
    """A node's citations live in chunks of their own (made.CitedChunks), not in its row: a dream that
    revisits a gist writes its new citations, and the node's row only when what it says changed."""
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    monkeypatch.setattr(made, "CITE_CHUNK", 2)
    records = memory_stream()
    step = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    cite_writes = [
        [k for k in table_after(step, table, records[start : start + 6]) if f"\x00{CITE_PREFIX}" in k]
        for start in range(0, len(records), 6)
    ]
    head = table["dana"]
    chunks = [p for p in head["parts"] if p.startswith(CITE_PREFIX)]
    assert len(chunks) >= 3 and 0 < max(len(w) for w in cite_writes) < len(chunks)
    rows = [row for p, slot in head["parts"].items() if p.startswith(MADE_PREFIX)
            for row in table[part_key("dana", p, slot)]["consolidated"]]  # fmt: skip
    assert rows and all(row[3] == [] for row in rows)  # no citation in a node's row
    memory = read(table)
    cited = {(node.node_id, c) for node in memory.graph.consolidated.values() for c in node.cites}
    written = [table[part_key("dana", p, head["parts"][p])] for p in chunks]
    in_chunks = [(node_id, c) for record in written for node_id, cites in record["cites"] for c in cites]
    assert cited and sorted(in_chunks) == sorted(cited)  # each citation once
    assert held(table) == held(run(records, batch=len(records))[1])


def test_a_memory_of_version_4_is_written_anew_with_the_citations_in_their_chunks(monkeypatch: Any) -> None:
    """Version 4 kept a node's citations in its row: the next write puts them in their chunks and
    rewrites every row without them, all before the head names them."""
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    monkeypatch.setattr(made, "MADE_CHUNK", 2)
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut], batch=6)
    older = as_version_4(states, "dana")
    assert any(row[3] for k, v in older.items() if v and f"\x00{MADE_PREFIX}" in k for row in v["consolidated"])
    step = DreamStep(Dreamer(CONFIG))
    table = json.loads(json.dumps(older))
    written = table_after(step, table, records[cut : cut + 6])
    head_at = written.index("dana")
    parts = table["dana"]["parts"]
    named = {part_key("dana", p, slot) for p, slot in parts.items() if p[0] in (MADE_PREFIX, CITE_PREFIX)}
    assert any(p.startswith(CITE_PREFIX) for p in parts) and named <= set(written[:head_at])
    rest, after, _ = run(records[cut:], states=older, batch=6)
    whole, clean, _ = run(records, batch=6)
    assert first + rest == whole
    assert after["dana"]["v"] == VERSION
    assert held(after) == held(clean)


def test_the_ids_of_echoes_on_their_way_live_in_chunks_and_a_chunk_all_come_back_is_deleted(monkeypatch: Any) -> None:
    """Dreaming's events not come back yet are named in chunks (chunks.py), not in the head, whose
    bytes then do not grow with what is in flight; once they come back, their chunks are deleted after
    the head and their ids are in the chunks of the latest echoes."""
    monkeypatch.setattr(chunks, "ECHO_CHUNK", 4)
    records = memory_stream()
    events, states, _ = run(records, batch=6)  # run() never feeds the dreams' events back
    head = states["dana"]
    pending = [p for p in head["parts"] if p.startswith(PENDING_PREFIX)]
    ids = [i for p in pending for i in states[part_key("dana", p, head["parts"][p])]["ids"]]
    assert "pending" not in head and len(events) > 8
    assert ids == [e["event_id"] for e in events] and len(pending) == -(-len(events) // 4)  # in order, once
    step = DreamStep(Dreamer(CONFIG))
    echo = [Record(MEMORY, 0, len(records) + i, 0, None, e) for i, e in enumerate(events)]
    writes, _ = step.process(states, group_by_key(step, echo))
    danas = [w for w in writes if w.key.startswith("dana")]
    head_at = [w.key for w in danas].index("dana")
    assert {part_key("dana", p, head["parts"][p]) for p in pending} <= {w.key for w in danas[head_at + 1 :]}
    assert all(w.state is None for w in danas[head_at + 1 :])
    after = states | {w.key: w.state for w in writes}
    assert not [p for p in after["dana"]["parts"] if p.startswith(PENDING_PREFIX)]
    memory = read(after)
    assert not memory.pending and list(memory.echoed) == [e["event_id"] for e in events]


def test_the_concepts_live_in_chunks_written_when_one_comes_or_changes(monkeypatch: Any) -> None:
    monkeypatch.setattr(chunks, "CONCEPT_CHUNK", 2)
    records = memory_stream()
    step = DreamStep(Dreamer(CONFIG))
    table: dict[str, Any] = {}
    written = [table_after(step, table, records[start : start + 6]) for start in range(0, len(records), 6)]
    head = table["dana"]
    parts = [p for p in head["parts"] if p.startswith(CONCEPT_PREFIX)]
    rows = [row for p in parts for row in table[part_key("dana", p, head["parts"][p])]["concepts"]]
    memory = read(table)
    assert "concepts" not in head["graph"] and len(parts) >= 3
    assert rows == [[c.node_id, c.label, c.committed] for c in memory.graph.concepts.values()]
    concept_writes = [len([k for k in keys if f"\x00{CONCEPT_PREFIX}" in k]) for keys in written]
    assert 0 in concept_writes and max(concept_writes) < len(parts)  # the chunks that changed, never all
    assert held(table) == held(run(records, batch=len(records))[1])


def test_a_memory_of_version_6_is_written_anew_with_the_concepts_in_chunks() -> None:
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut], batch=6)
    older = as_version_6(states, "dana")
    assert older["dana"]["graph"]["concepts"]
    rest, after, _ = run(records[cut:], states=older, batch=6)
    whole, clean, _ = run(records, batch=6)
    assert first + rest == whole
    assert after["dana"]["v"] == VERSION and "concepts" not in after["dana"]["graph"]
    assert held(after) == held(clean)


def test_a_memory_of_version_5_is_written_anew_with_the_ids_of_echoes_in_chunks() -> None:
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut], batch=6)
    older = as_version_5(states, "dana")
    assert older["dana"]["pending"]
    rest, after, _ = run(records[cut:], states=older, batch=6)
    whole, clean, _ = run(records, batch=6)
    assert first + rest == whole
    assert after["dana"]["v"] == VERSION and "pending" not in after["dana"]
    assert any(p.startswith(PENDING_PREFIX) for p in after["dana"]["parts"])
    assert held(after) == held(clean)


def test_a_memory_of_version_2_is_written_anew_under_its_new_chunks_and_the_old_are_deleted_after_the_head(
    monkeypatch: Any,
) -> None:
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    records = memory_stream()
    cut = len(records) // 2
    first, states, _ = run(records[:cut], batch=6)
    older = as_version_2(states, "dana")
    old_keys = {part_key("dana", p, slot) for p, slot in older["dana"]["parts"].items()}
    assert any(not p.startswith(("c", DREAMS)) for p in older["dana"]["parts"])
    step = DreamStep(Dreamer(CONFIG))
    writes, _ = step.process(older, group_by_key(step, records[cut : cut + 6]))
    danas = [w for w in writes if w.key.startswith("dana")]
    head_at = [w.key for w in danas].index("dana")
    assert not {w.key for w in danas[:head_at]} & old_keys  # a crash before the head leaves version 2 whole
    retired = {w.key for w in danas[head_at + 1 :]}
    assert all(w.state is None for w in danas[head_at + 1 :])
    assert {k for k in old_keys if DREAMS not in k} <= retired
    rest, after, _ = run(records[cut:], states=older, batch=6)
    whole, clean, _ = run(records, batch=6)
    assert first + rest == whole
    assert after["dana"]["v"] == VERSION
    assert all(after[k] is None for k in old_keys if DREAMS not in k)  # deleted (the table drops a None)
    assert held(after) == held(clean)


def test_an_erasure_deletes_both_slots_of_every_part_of_the_users_memory(monkeypatch: Any) -> None:
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    _, states, _ = run(memory_stream(), batch=6)
    parts = states["dana"]["parts"]
    assert len(parts) > 2
    change: SubjectErased = {"user_id": "dana", "reason": "test", "requested_by": None}
    erasure = memory_event("dana", 2_000_000_000_000, [], SUBJECT_ERASED, change)
    step = DreamStep(Dreamer(CONFIG))
    writes, _ = step.process(states, group_by_key(step, [Record(MEMORY, 0, 10_000, 0, None, erasure)]))
    assert {w.key for w in writes if w.state is None} == {part_key("dana", p, s) for p in parts for s in (0, 1)}
    danas = [w for w in writes if w.key.startswith("dana")]
    head_at = [w.key for w in danas].index("dana")
    assert all(w.state is None for w in danas[head_at + 1 :])  # deleted once the new head is written
    head = next(w.state for w in writes if w.key == "dana")
    assert head is not None and head["parts"] == {} and head["graph"]["arrivals"] == 0


def test_a_batch_whose_parts_were_written_but_not_its_head_comes_again_and_ends_as_a_clean_run(
    monkeypatch: Any,
) -> None:
    """A crash between a batch's part writes and its head: the new slots are written, the head still
    names the old ones. The batch comes again to the memory of before it, and ends as a clean run."""
    monkeypatch.setattr(dream_rows, "CHUNK_EPISODES", 3)
    records = memory_stream()
    cut = len(records) // 2
    events, before, _ = run(records[: cut - 20])
    step = DreamStep(Dreamer(CONFIG))
    writes, _ = step.process(json.loads(json.dumps(before)), group_by_key(step, records[cut - 20 : cut]))
    head = next(i for i, w in enumerate(writes) if w.key == "dana")
    assert head > 0
    torn = json.loads(json.dumps(before)) | {w.key: w.state for w in writes[:head] if w.key.startswith("dana")}
    rest, mended, _ = run(records[cut - 20 :], states=torn)
    whole, clean, _ = run(records)
    assert events + rest == whole
    assert held(mended) == held(clean)
