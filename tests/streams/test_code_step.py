"""The code graph step derives the same events however the changes are batched: a replay or a
restart cuts batches elsewhere, and a node's sources and time must not follow the cut."""

from __future__ import annotations

from engram.benchmarks.chaos_traffic import code_change
from engram.processors.tokens import default_token_counter
from engram.schemas.record import Record
from engram.schemas.records import CodeChange, MemoryEvent
from engram.streams.agents.ingest import group_by_key
from engram.streams.commit import JsonState
from engram.streams.sample import load_sample
from engram.streams.steps import CodeGraphStep


def changes() -> list[Record[CodeChange]]:
    """Twelve changes of four files of one repo, each file edited three times; interfaces change."""
    files = [c for c in load_sample().code if c["language"] == "python"]
    out = []
    for k in range(12):
        change = code_change(k, files[k % len(files)], 1_700_000_000_000 + k * 60_000)
        change["repo"] = "repo"
        out.append(Record("engram.code", 0, k, 0, None, change))
    return out


def derive(batches: list[list[Record[CodeChange]]]) -> tuple[list[MemoryEvent], dict[str, JsonState]]:
    step = CodeGraphStep(default_token_counter())
    states: dict[str, JsonState] = {}
    events: list[MemoryEvent] = []
    for batch in batches:
        writes, derived = step.process(states, group_by_key(step, batch))
        states.update({w.key: w.state for w in writes if w.state is not None})
        events += derived
    return events, states


def test_one_batch_and_one_change_per_batch_derive_the_same() -> None:
    records = changes()
    whole = derive([records])
    assert whole == derive([[r] for r in records])
    assert whole == derive([records[:5], records[5:7], records[7:]])
    assert len(whole[0]) > 0


def test_a_worker_that_gets_a_repo_back_reads_what_the_other_worker_wrote() -> None:
    """Worker A applies a batch, the repo's partition moves to B (which applies the next), then back
    to A: A's cached state is stale, and it must derive from the table B left."""
    records = changes()
    a, b = CodeGraphStep(default_token_counter()), CodeGraphStep(default_token_counter())
    table: dict[str, JsonState] = {}
    events: list[MemoryEvent] = []
    for step, batch in ((a, records[:4]), (b, records[4:8]), (a, records[8:])):
        writes, derived = step.process(table, group_by_key(step, batch))
        table.update({w.key: w.state for w in writes if w.state is not None})
        events += derived
    assert (events, table) == derive([records])


def test_changes_that_come_again_after_a_crash_derive_nothing_more() -> None:
    """The worker wrote the state of changes 0-5 but committed offsets only up to 3 before it died:
    changes 3-5 come again, to a state that holds them, and must not be applied twice."""
    records = changes()
    assert derive([records[:6], records[3:9], records[9:]]) == derive([records])
    assert derive([records[:6], records[:6], records[6:]]) == derive([records])
