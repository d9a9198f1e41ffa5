"""SLB epochs survive a restart (issue 49): each user's epoch is kept in the SLB table beside the
user's buffers and read back before the restarted worker counts or serves for that user, so an
entry filled before the restart expires `max_age_events` memory events later, not 5,000 later.
In process, no broker: a changelog-backed table, a service, a restart (a new service on it)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence

import pytest

from engram.processors.compiler import BALANCED, ContextCompiler
from engram.processors.retrieval.view import MemoryView
from engram.processors.slb import LookasideTable, SlbConfig, epoch_key
from engram.schemas.codec import AvroCodec
from engram.schemas.events import memory_event, node_upserted
from engram.schemas.record import Record
from engram.schemas.records import NODE_UPSERTED, CompiledContext, ContextRequest, MemoryEvent
from engram.streams.agents.compile import ContextService
from engram.streams.commit import JsonState
from engram.streams.metrics import EngramMetrics
from tests.compiler.memory import counter, embedder
from tests.streams.flow import Armed, ListTable
from tests.streams.test_compile_refusals import NoBroker

USER = "ada"
MAX_AGE = 20
REQUESTS: AvroCodec[ContextRequest] = AvroCodec("ContextRequest")
CONTEXTS: AvroCodec[CompiledContext] = AvroCodec("CompiledContext")
Changelog = list[tuple[int, str, JsonState | None]]


def memory(first: int, count: int) -> list[Record[MemoryEvent]]:
    out = []
    for i in range(first, first + count):
        text = f"Ada moved the orders database to Postgres, note {i}" if i < 3 else f"Ada's unrelated note {i}"
        node = node_upserted(f"n{i}", "event", "USER", 1_000 + i, text=text, user_id=USER, session_id="s")
        out.append(
            Record("memory", 0, i, 1_000 + i, USER.encode(), memory_event(USER, 1_000 + i, [], NODE_UPSERTED, node))
        )
    return out


@pytest.fixture
def started() -> Iterator[list[ContextService]]:
    made: list[ContextService] = []
    yield made
    for service in made:
        service.close()


def start(changelog: Changelog, made: list[ContextService]) -> ContextService:
    """A worker start: a fresh view and SLB, the table rebuilt from its changelog."""
    view = MemoryView(embedder=embedder(), token_counter=counter())
    slb = LookasideTable(SlbConfig(max_age_events=MAX_AGE))
    compiler = ContextCompiler(view, embedder(), counter(), BALANCED, slb=slb)
    table = ListTable(changelog, Armed())
    made.append(ContextService(view, compiler, slb, NoBroker(), "compiled", "memory", "deadletter",
                               EngramMetrics(), slb_table=table))  # fmt: skip
    return made[-1]


def ask(service: ContextService, changelog: Changelog, n: int) -> bool:
    """One request; its SLB write applied as the commit would. Whether it hit the SLB."""
    request: ContextRequest = {
        "request_id": f"r{n}", "user_id": USER, "session_id": "s", "query": "Where did the orders database go?",
        "token_budget": 300, "authorized_layers": ["USER"], "intent_hint": None, "agent_id": None,
        "event_time_ms": 9_000, "token": None,
    }  # fmt: skip
    record = Record("requests", 0, n, 9_000, USER.encode(), REQUESTS.encode(request))
    answer = asyncio.run(service.answer(record))
    for write in answer.writes:
        write.table.write(write.partition, write.key, write.state)
    return bool(CONTEXTS.decode(answer.outputs[0].value)["cache_hit"])


def observe(service: ContextService, records: Sequence[Record[MemoryEvent]]) -> None:
    asyncio.run(service.observe(records))


def test_an_entry_filled_before_a_restart_expires_on_the_epoch_it_would_have(started: list[ContextService]) -> None:
    changelog: Changelog = []
    before = start(changelog, started)
    observe(before, memory(0, 10))
    assert before.slb_table is not None and before.slb_table[epoch_key(USER)] == {"epoch": 10}
    assert not ask(before, changelog, 0) and ask(before, changelog, 1)
    after = start(changelog, started)  # a restart: the table is read back, the view gets only new memory
    after.view.apply([r.value for r in memory(0, 10)])  # what it held before, as a snapshot would restore it
    observe(after, memory(10, MAX_AGE))
    assert after.slb.epoch(USER) == 10 + MAX_AGE and ask(after, changelog, 2)  # exactly max age: fresh
    observe(after, memory(10 + MAX_AGE, 1))
    assert not ask(after, changelog, 3)  # one more: the entry from before the restart has aged out


def test_memory_replayed_after_a_restart_ages_entries_early_never_late(started: list[ContextService]) -> None:
    changelog: Changelog = []
    before = start(changelog, started)
    observe(before, memory(0, 10))
    ask(before, changelog, 0)
    after = start(changelog, started)
    observe(after, memory(0, 10))  # the view, empty, is fed the same memory again
    assert after.slb.epoch(USER) == 20


def test_a_request_before_any_memory_restores_the_epoch_first(started: list[ContextService]) -> None:
    changelog: Changelog = []
    before = start(changelog, started)
    observe(before, memory(0, 10 + MAX_AGE))
    ask(before, changelog, 0)
    after = start(changelog, started)
    after.view.apply([r.value for r in memory(0, 10 + MAX_AGE)])  # the view as a snapshot would hold it
    assert ask(after, changelog, 1)  # still fresh: filled at this very epoch
    assert after.slb.epoch(USER) == 10 + MAX_AGE
    observe(after, memory(10 + MAX_AGE, MAX_AGE + 1))
    assert not ask(after, changelog, 2)


def test_an_erased_users_epoch_leaves_the_table() -> None:
    table = LookasideTable(SlbConfig())
    assert table.restore_epoch(USER, {"epoch": 7}) == 7 and not table.needs_epoch(USER)
    assert table.restore_epoch(USER, {"epoch": 100}) == 7  # once per start
    table.forget_user(USER)
    assert table.needs_epoch(USER) and table.epoch(USER) == 0
    assert epoch_key(USER).startswith("3:ada|")
