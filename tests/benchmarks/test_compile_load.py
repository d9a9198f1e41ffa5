"""`engram bench compile`'s memory, waits and climb, without a broker: the memory is one the worker's
own steps derive from (facts, dreams), the waits are on offsets the bench published, per principal
(benchmarks/compile_load.py), and the climb to max_answered_per_s stops at the first rate the worker
cannot keep up with (benchmarks/compile_saturation.py)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any, cast

import pytest
from confluent_kafka import Message

from engram.benchmarks import compile_saturation
from engram.benchmarks.compile_load import Published, behind, held_visible, wait_until
from engram.benchmarks.compile_measure import Measured
from engram.benchmarks.compile_memory import (
    PRINCIPAL,
    TEAM_INSTANCE,
    Layout,
    layout_events,
    many_users,
    memory_texts,
    one_principal,
)
from engram.processors.facts import Utterance
from engram.schemas.changes import change_as
from engram.schemas.record import Record
from engram.schemas.records import CompiledContext, ContextRequest, MemoryEvent, NodeUpserted
from engram.streams.agents.ingest import group_by_key
from engram.streams.agents.stores import with_upstream
from engram.streams.config import EngramConfig
from engram.streams.dream_step import DreamStep
from engram.streams.steps import FactsStep

BATCH = 500  # records per memory-agent batch in the in-process run below


@dataclass
class Delivered:
    """What `Published.note` reads of a delivered message."""

    key_: bytes
    partition_: int
    offset_: int

    def key(self) -> bytes:
        return self.key_

    def partition(self) -> int:
        return self.partition_

    def offset(self) -> int:
        return self.offset_


def fake_table(corpus: list[str]) -> dict[str, tuple[list[float], int]]:
    return {text: ([1.0, 0.0], 5) for text in corpus}


def events_of(layout: Layout) -> list[MemoryEvent]:
    corpus = memory_texts(None)
    return layout_events(layout, corpus, fake_table(corpus))


def nodes_of(events: list[MemoryEvent]) -> list[NodeUpserted]:
    return [n for e in events if (n := change_as(e, NodeUpserted)) is not None]


def test_the_nodes_are_trace_shaped_and_team_nodes_name_the_team() -> None:
    nodes = nodes_of(events_of(one_principal(100, 2)))
    assert all(Utterance.from_event_node(n) is not None for n in nodes), "the facts step reads every node"
    assert {n["properties"]["role"] for n in nodes} == {"user", "assistant"}
    assert {(n["layer"], n["instance"]) for n in nodes} == {("USER", None), ("TEAM", TEAM_INSTANCE)}


def test_generated_texts_carry_first_person_statements() -> None:
    corpus = memory_texts(None)
    statements = [t for t in corpus if t.startswith(("I ", "My "))]
    assert len(statements) == pytest.approx(len(corpus) / 10, rel=0.05)


def derive(events: list[MemoryEvent]) -> Counter[str]:
    """What the memory agent's facts and dream steps derive from ``events`` (one partition, in
    batches, as streams/agents/stores.py runs them), counted by event kind and node kind."""
    records = [Record("engram.memory", 0, i, 0, None, e) for i, e in enumerate(events)]
    facts, dreams = FactsStep(), DreamStep()
    fact_states: dict[str, Any] = {}
    dream_states: dict[str, Any] = {}
    made: Counter[str] = Counter()
    for start in range(0, len(records), BATCH):
        batch = records[start : start + BATCH]
        writes, decided = facts.process(fact_states, group_by_key(facts, batch))
        fact_states.update({w.key: w.state for w in writes})
        upstream = with_upstream(batch, decided)
        dream_writes, dreamt = dreams.process(dream_states, group_by_key(dreams, upstream))
        for w in dream_writes:
            if w.state is None:
                dream_states.pop(w.key, None)
            else:
                dream_states[w.key] = w.state
        for event in decided + dreamt:
            made[event["change"][0]] += 1
            node = change_as(event, NodeUpserted)
            if node is not None:
                made[f"{node['layer']} {node['kind']}"] += 1
    return made


def test_at_the_smoke_size_the_workers_steps_derive_facts_and_dreams() -> None:
    """The e2e smoke (tests/e2e/test_compile_bench_smoke.py) runs at this size so that the worker
    derives from the bench's memory as it does at full size."""
    for layout in (many_users(1600, 4), one_principal(1600, 4)):
        made = derive(events_of(layout))
        assert made["engram.FactDecided"] > 0, layout.name
        assert made["USER toc"] > 0 and made["USER profile"] + made["USER rule"] > 0, layout.name
    assert made["TEAM toc"] > 0, "one_principal: dreams over the teammates' TEAM sessions"


def test_each_principal_waits_for_the_partitions_of_what_it_may_see() -> None:
    layout = one_principal(20, 2)
    authors = sorted({a.user_id for a in layout.owners})
    published = Published()
    for offset, author in enumerate(authors):  # teammates on partitions 0-1, the principal on 2
        partition = 2 if author == PRINCIPAL else offset % 2
        published.note(cast(Message, Delivered(author.encode(), partition, 10 + offset)))
    required = published.required(layout)
    assert set(required) == {PRINCIPAL}
    assert set(required[PRINCIPAL]) == {0, 1, 2} and required[PRINCIPAL] == published.ends

    users = many_users(8, 2)
    published = Published()
    for key, partition, offset in ((b"bench-user-0", 0, 4), (b"bench-user-1", 1, 2), (b"bench-user-0", 0, 7)):
        published.note(cast(Message, Delivered(key, partition, offset)))
    assert published.required(users) == {"bench-user-0": {0: 8}, "bench-user-1": {1: 3}}


def test_behind_lists_what_is_left_to_apply() -> None:
    assert behind({0: 5, 1: 3}, {0: 5, 1: 4, 2: 0}) == {1: 1}
    assert behind({}, {0: 2}) == {0: 2}


def test_held_visible_counts_the_shared_layers_and_the_principals_own() -> None:
    held = {"layers": {"TEAM": 7, "USER": 9}, "users": {PRINCIPAL: 5, "someone": 4}}
    assert held_visible(held, one_principal(10, 1)) == {PRINCIPAL: 12}
    assert held_visible(held, many_users(4, 2)) == {"bench-user-0": 0, "bench-user-1": 0}


def test_a_wait_that_never_completes_says_what_is_missing() -> None:
    notes: list[str] = []
    with pytest.raises(TimeoutError, match="missing offsets 3"):
        wait_until(lambda: "offsets 3", "applying", -1.0, notes.append)
    assert wait_until(lambda: None, "applying", 0.0, notes.append) >= 0.0


def measured(rate: float, count: int, lag_s: float, latency_ms: float, missing: int = 0) -> Measured:
    """``count`` requests sent at ``rate``; answers spread over the send span plus ``lag_s``."""
    sent_span = (count - 1) / rate
    compiled = [cast(CompiledContext, {"cache_hit": False}) for _ in range(count - missing)]
    return Measured([latency_ms] * len(compiled), compiled, missing, sent_span + lag_s, sent_span, sent_span + lag_s)


def test_keeping_up_compares_the_answer_rate_with_the_offered_rate() -> None:
    assert measured(100, 500, 0.0, 9.0).keeping_up() == pytest.approx(1.0)
    assert measured(100, 500, 1.0, 9.0).keeping_up() < 0.9  # answers spread out behind the sends
    assert measured(100, 500, 0.0, 9.0, missing=50).keeping_up() < 0.95


def test_the_climb_stops_at_the_first_rate_the_worker_cannot_keep_up_with(monkeypatch: pytest.MonkeyPatch) -> None:
    outcomes = {100.0: measured(100, 500, 0.0, 8.0), 200.0: measured(200, 1000, 0.01, 12.0),
                300.0: measured(300, 1500, 0.0, 70.0), 400.0: measured(400, 2000, 0.0, 20.0),
                600.0: measured(600, 3000, 2.0, 300.0), 800.0: measured(800, 4000, 0.0, 5.0)}  # fmt: skip
    offered: list[tuple[int, int, float]] = []

    def fake_measure(_config: object, batches: list[tuple[list[ContextRequest], float]]) -> list[Measured]:
        ((requests, rate),) = batches
        offered.append((len(requests), int(requests[0]["request_id"]), rate))
        return [outcomes[rate]]

    monkeypatch.setattr(compile_saturation, "measure", fake_measure)

    def requests(count: int, first: int) -> list[ContextRequest]:
        return [cast(ContextRequest, {"request_id": str(first + i)}) for i in range(count)]

    clock = iter(range(0, 1000, 2))  # each process spends 2 s more per reading

    def cpu() -> dict[str, float]:
        return dict.fromkeys(("worker", "broker"), float(next(clock)))

    result = compile_saturation.saturate(cast(EngramConfig, None), requests, 7, tuple(outcomes), 5.0, cpu)
    assert [rate for _, _, rate in offered] == [100.0, 200.0, 300.0, 400.0, 600.0], "none after falling behind"
    assert [first for _, first, _ in offered] == [7, 507, 1507, 3007, 5007], "numbered on"
    # The goal's figure: the last step before the first one too slow (300/s: p99 70 ms).
    assert result["max_answered_per_s"] == result["steps"][1]["answered_per_s"] == pytest.approx(199.6, abs=0.1)
    assert result["p99_ms_at_max"] == 12.0 and result["max_ended_by"] == "p99 70.0 ms > 50.0 ms at 300.0/s"
    # Throughput: kept up through 400/s, fell behind at 600/s.
    assert result["max_kept_up_per_s"] == result["steps"][3]["answered_per_s"] and result["p99_ms_at_kept_up"] == 20.0
    assert result["stopped_by"].startswith("answered/offered") and "600.0/s" in result["stopped_by"]
    answered = result["steps"][0]["requests"] - result["steps"][0]["missing"]  # CPU over the step, per answer
    assert result["steps"][0]["cpu_ms_per_request"] == dict.fromkeys(("worker", "broker"), round(2000 / answered, 3))


def test_a_climb_whose_first_step_fails_reports_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compile_saturation, "measure", lambda _c, _b: [measured(100, 500, 0.0, 80.0)])
    result = compile_saturation.saturate(cast(EngramConfig, None), lambda c, f: [], 0, (100.0,), 5.0, dict)
    assert (result["max_answered_per_s"], result["p99_ms_at_max"]) == (0.0, None)
    assert result["max_ended_by"] == "p99 80.0 ms > 50.0 ms at 100.0/s"
    assert result["max_kept_up_per_s"] == 100.0
